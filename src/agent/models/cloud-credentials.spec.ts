import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudCredentials, parseCredentials } from './cloud-credentials';

describe('parseCredentials', () => {
  it('reads AWS credential-process JSON, and keeps it until a minute before it expires', () => {
    const now = Date.parse('2026-11-29T10:00:00Z');
    expect(
      parseCredentials('{"Version":1,"AccessKeyId":"AKID","SecretAccessKey":"s3cr3t","SessionToken":"tok","Expiration":"2026-11-29T11:00:00Z"}\n', now),
    ).toEqual({
      kind: 'aws',
      accessKeyId: 'AKID',
      secretAccessKey: 's3cr3t',
      sessionToken: 'tok',
      until: Date.parse('2026-11-29T10:59:00Z'),
    });
  });

  it('reads anything else of one word as a bearer token, kept five minutes', () => {
    expect(parseCredentials('ya29.a0AfB_token\n', 0)).toEqual({ kind: 'bearer', token: 'ya29.a0AfB_token', until: 300_000 });
  });

  it('refuses output it cannot use, without quoting it (it may hold a secret)', () => {
    expect(() => parseCredentials('{"AccessKeyId":"AKID"}')).toThrow('printed JSON without AccessKeyId and SecretAccessKey (AWS credential-process format)');
    expect(() => parseCredentials('{not json s3cr3t')).toThrow(/^cloudModelConfig\.cloudCredentialExport printed JSON that does not parse$/);
    expect(() => parseCredentials('Please sign in: s3cr3t')).toThrow(/printed neither AWS credential-process JSON nor a token$/);
  });
});

describe('CloudCredentials', () => {
  let workspace: string;
  beforeEach(() => (workspace = mkdtempSync(join(tmpdir(), 'cloud-credentials-'))));
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  it('sends a token as a bearer, exported once until renewed, then signed in and exported again', async () => {
    const credentials = new CloudCredentials(
      async () => ({ cloudCredentialExport: 'echo x >> exports && echo "token-$(wc -l < exports | tr -d " ")"', cloudAuthRefresh: 'echo in >> sign-ins' }),
      workspace,
    );
    expect(await credentials.headers('https://us-central1-aiplatform.googleapis.com/v1/x', '{}')).toEqual({ authorization: 'Bearer token-1' });
    expect(await credentials.headers('https://us-central1-aiplatform.googleapis.com/v1/x', '{}')).toEqual({ authorization: 'Bearer token-1' });
    await credentials.renew();
    expect(await credentials.headers('https://us-central1-aiplatform.googleapis.com/v1/x', '{}')).toEqual({ authorization: 'Bearer token-2' });
  });

  it('signs in when the export fails, and names the failing setting when that does not help', async () => {
    const failing = new CloudCredentials(async () => ({ cloudCredentialExport: 'echo "not signed in" >&2; exit 3' }), workspace);
    await expect(failing.headers('https://x.example.com', '{}')).rejects.toThrow('cloudModelConfig.cloudCredentialExport failed (exit 3): not signed in');
    const rescued = new CloudCredentials(
      async () => ({ cloudCredentialExport: 'test -f signed-in && echo tok', cloudAuthRefresh: 'touch signed-in' }),
      workspace,
    );
    expect(await rescued.headers('https://x.example.com', '{}')).toEqual({ authorization: 'Bearer tok' });
  });
});
