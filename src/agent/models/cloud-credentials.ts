import aws4 from 'aws4';
import { runInProcessGroup } from '../process-group';
import { commandEnvironment } from '../tools/execute';
import type { RequestAuth } from './model-http';

/** A custom model's `cloudModelConfig`: a model reached at `cloudBaseUrl` with the computer's own cloud credentials. */
export interface CloudModelConfig {
  cloudProfile?: string;
  cloudRegion?: string;
  cloudBaseUrl?: string;
  cloudAuthRefresh?: string;
  cloudCredentialExport?: string;
}

/** Seconds the credential commands may run (a sign-in may wait on a person at a browser). */
export const CLOUD_COMMAND_TIMEOUT_SECONDS = 120;
/** How long a bearer token is used before it is exported again (the command says nothing of its expiry). */
const TOKEN_REUSE_MS = 5 * 60_000;
/** Credentials with an expiry are exported again this long before it. */
const EXPIRY_MARGIN_MS = 60_000;

type Credentials =
  { kind: 'aws'; accessKeyId: string; secretAccessKey: string; sessionToken?: string; until: number } | { kind: 'bearer'; token: string; until: number };

/**
 * The credentials of a model reached with the computer's cloud identity, as the agent of a tool like the
 * AWS or Google Cloud command line gets them: `cloudCredentialExport` prints them, and runs again when they
 * expire. What it prints decides how requests carry them:
 * - AWS's credential-process JSON (`aws configure export-credentials --format process`): each request is
 *   signed with Signature Version 4 for Amazon Bedrock, in `cloudRegion` (else the region of the endpoint's host);
 * - anything else is a token (`gcloud auth print-access-token`, `az account get-access-token ... -o tsv`),
 *   sent as `Authorization: Bearer`.
 * When the export fails, or the vendor refuses the credentials (401, 403), `cloudAuthRefresh` runs (a
 * sign-in such as `aws sso login`) and the export runs again. Both commands run in the workspace with the
 * environment commands get, plus `cloudProfile` as AWS_PROFILE and CLOUDSDK_ACTIVE_CONFIG_NAME and
 * `cloudRegion` as AWS_REGION. The credentials stay in the agent's memory: never logged, never in a session.
 */
export class CloudCredentials implements RequestAuth {
  private current: Credentials | null = null;
  private pending: Promise<Credentials> | null = null;
  private config: CloudModelConfig = {};

  /** `load`: the model's cloudModelConfig, its commands revealed (asked of the platform again at each export). */
  constructor(
    private readonly load: () => Promise<CloudModelConfig>,
    private readonly workspace: string,
  ) {}

  async headers(url: string, body: string): Promise<Record<string, string>> {
    const credentials = await this.credentials();
    if (credentials.kind === 'bearer') return { authorization: `Bearer ${credentials.token}` };
    const target = new URL(url);
    const signed = aws4.sign(
      {
        host: target.host,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        service: 'bedrock',
        region: this.config.cloudRegion || regionOfHost(target.hostname),
        headers: { 'content-type': 'application/json' },
        body,
      },
      { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, sessionToken: credentials.sessionToken },
    );
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers ?? {})) {
      if (name.toLowerCase() !== 'host' && name.toLowerCase() !== 'content-length') headers[name.toLowerCase()] = String(value);
    }
    return headers;
  }

  /** Signs in again (`cloudAuthRefresh`, when set) and forgets the credentials, so that the next request exports new ones. */
  async renew(): Promise<void> {
    this.current = null;
    this.config = await this.load();
    if (this.config.cloudAuthRefresh) await this.run(this.config.cloudAuthRefresh, 'cloudAuthRefresh');
  }

  private async credentials(): Promise<Credentials> {
    if (this.current && this.current.until > Date.now()) return this.current;
    this.pending ??= this.export().finally(() => (this.pending = null));
    return (this.current = await this.pending);
  }

  private async export(): Promise<Credentials> {
    this.config = await this.load();
    const command = this.config.cloudCredentialExport;
    if (!command) throw new Error('cloudModelConfig.cloudCredentialExport is not set: there is no command to get the cloud credentials from');
    let output: string;
    try {
      output = await this.run(command, 'cloudCredentialExport');
    } catch (error) {
      if (!this.config.cloudAuthRefresh) throw error;
      await this.run(this.config.cloudAuthRefresh, 'cloudAuthRefresh');
      output = await this.run(command, 'cloudCredentialExport');
    }
    return parseCredentials(output);
  }

  /** The command's standard output; an Error naming the setting (never the output, which may hold a secret) when it fails. */
  private async run(command: string, setting: string): Promise<string> {
    let stdout = '';
    let stderr = '';
    const { cloudProfile, cloudRegion } = this.config;
    const ended = await runInProcessGroup({
      file: '/bin/sh',
      args: ['-c', command],
      cwd: this.workspace,
      env: {
        ...commandEnvironment(),
        ...(cloudProfile ? { AWS_PROFILE: cloudProfile, CLOUDSDK_ACTIVE_CONFIG_NAME: cloudProfile } : {}),
        ...(cloudRegion ? { AWS_REGION: cloudRegion, AWS_DEFAULT_REGION: cloudRegion } : {}),
      },
      timeoutMs: CLOUD_COMMAND_TIMEOUT_SECONDS * 1000,
      onStdout: (text) => (stdout += text),
      onStderr: (text) => (stderr = (stderr + text).slice(-500)),
    });
    if (ended.startError) throw new Error(`cloudModelConfig.${setting} could not start: ${ended.startError.message}`);
    if (ended.ending === 'timeout') throw new Error(`cloudModelConfig.${setting} did not finish within ${CLOUD_COMMAND_TIMEOUT_SECONDS} s`);
    if (ended.exitCode !== 0)
      throw new Error(`cloudModelConfig.${setting} failed (exit ${ended.exitCode ?? ended.exitSignal}): ${stderr.trim() || 'no message'}`);
    return stdout;
  }
}

/** AWS's credential-process JSON, or a bearer token (the output's one line). */
export function parseCredentials(output: string, now = Date.now()): Credentials {
  const text = output.trim();
  if (text.startsWith('{')) {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new Error('cloudModelConfig.cloudCredentialExport printed JSON that does not parse');
    }
    const { AccessKeyId, SecretAccessKey, SessionToken, Expiration } = parsed;
    if (typeof AccessKeyId !== 'string' || typeof SecretAccessKey !== 'string') {
      throw new Error('cloudModelConfig.cloudCredentialExport printed JSON without AccessKeyId and SecretAccessKey (AWS credential-process format)');
    }
    const expires = typeof Expiration === 'string' ? Date.parse(Expiration) : NaN;
    return {
      kind: 'aws',
      accessKeyId: AccessKeyId,
      secretAccessKey: SecretAccessKey,
      ...(typeof SessionToken === 'string' ? { sessionToken: SessionToken } : {}),
      until: Number.isNaN(expires) ? now + TOKEN_REUSE_MS : expires - EXPIRY_MARGIN_MS,
    };
  }
  if (text === '' || /\s/.test(text)) throw new Error('cloudModelConfig.cloudCredentialExport printed neither AWS credential-process JSON nor a token');
  return { kind: 'bearer', token: text, until: now + TOKEN_REUSE_MS };
}

/** `bedrock-runtime.eu-west-1.amazonaws.com` is in eu-west-1; a host naming no region, us-east-1 (AWS's default). */
function regionOfHost(host: string): string {
  return /\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com$/.exec(host)?.[1] ?? 'us-east-1';
}
