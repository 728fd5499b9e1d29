import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { AgentPolicy } from '../../contract/agent-channel';
import { AddressPolicy, pinnedLookup } from '../../contract/address-policy';
import { AllowedIps } from '../sandbox/network-policy';

/** A request the organization's or the operator's rules refuse; its message says which rule, and that nothing was sent. */
export class OutboundRefused extends Error {}

export type OutboundPolicy = Partial<Pick<AgentPolicy, 'sandbox' | 'networkPolicy'>>;

/**
 * The operator's hosts the agent's own HTTP requests (WebFetch, plugins' HTTP MCP servers) may reach although they are
 * on private addresses: `AGENT_WEB_ALLOWED_HOSTS` (exact `host` or `host:port`, comma-separated).
 */
export function agentAllowedHosts(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.AGENT_WEB_ALLOWED_HOSTS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/**
 * Where the agent may connect for `url`, or an OutboundRefused saying which rule refused it: the one address policy of
 * the platform's own outbound requests (public addresses only, no metadata service, unless the operator names the
 * host), inside the organization's `networkPolicy.allowedIps`, and, under `sandbox.enabled`, a host its
 * `network.allowedDomains` names: the same network as the organization's commands.
 */
export async function destinationOf(url: URL, policy: OutboundPolicy, allowedHosts: readonly string[]): Promise<string[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundRefused(`Refused: only http and https addresses are fetched, not ${url.protocol}`);
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const sandbox = policy.sandbox;
  if (sandbox?.enabled && !sandbox.network.allowedDomains.some((entry) => domainMatches(entry, host, port))) {
    throw new OutboundRefused(`Refused by the organization's sandbox.network.allowedDomains: ${host} is not among them; nothing was fetched.`);
  }
  const vetted = await new AddressPolicy({ allowedHosts: [...allowedHosts], allowedIps: AllowedIps.of(policy) }).vet(host, port);
  if (!vetted.allowed) throw new OutboundRefused(`Refused: ${vetted.reason}; nothing was fetched.`);
  return vetted.addresses;
}

/** Whether an `allowedDomains` entry (`example.com`, `*.example.com`, with or without `:port`) covers this host and port. */
function domainMatches(entry: string, host: string, port: number): boolean {
  const match = /^(.*?)(?::(\d+))?$/.exec(
    entry
      .trim()
      .toLowerCase()
      .replace(/^\[(.*)\](:\d+)?$/, '$1$2'),
  )!;
  const [, pattern, entryPort] = match;
  if (entryPort !== undefined && Number(entryPort) !== port) return false;
  const name = host.toLowerCase();
  return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern;
}

/**
 * `fetch` for a library that makes the agent's requests itself (the MCP SDK's HTTP transport), kept to
 * `destinationOf`: every request's URL is vetted and connected to at the vetted addresses only (the lookup pinned),
 * and a redirect comes back as the answer, never followed. The answer's body streams (an MCP server may answer with
 * an event stream).
 */
export function outboundFetch(
  policy: OutboundPolicy,
  allowedHosts: readonly string[],
): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const addresses = await destinationOf(url, policy, allowedHosts);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(url, { method: init.method ?? 'GET', headers, lookup: pinnedLookup(addresses), signal: init.signal ?? undefined }, resolve);
      request.on('error', reject);
      request.end(body);
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const status = answer.statusCode ?? 502;
    const empty = status === 204 || status === 205 || status === 304 || (init.method ?? 'GET') === 'HEAD';
    if (empty) answer.resume();
    return new Response(empty ? null : (Readable.toWeb(answer) as ReadableStream<Uint8Array>), { status, headers: responseHeaders });
  };
}
