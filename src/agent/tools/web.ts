import { IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import TurndownService from 'turndown';
import { pinnedLookup } from '../../contract/address-policy';
import { agentAllowedHosts, destinationOf, OutboundRefused } from '../net/outbound';
import { defineTool, optionalNumber, optionalString, requiredString, ToolError } from './common';
import type { AgentTool, ToolContext } from './tool';

/** Characters of a page the model gets (the rest is cut, and the result says so). */
export const WEB_FETCH_MAX_CHARACTERS = 100_000;
/** Bytes of an answer read at most: a larger page is cut there. */
const WEB_FETCH_MAX_BYTES = 5 * 1024 * 1024;
const WEB_TIMEOUT_MS = 30_000;
/** Results of a search the model gets. */
const SEARCH_RESULTS = 10;

/**
 * The operator's settings for the agent's web tools, from its environment: `AGENT_WEB_ALLOWED_HOSTS` (exact `host` or
 * `host:port`, comma-separated: hosts on private addresses the tools may reach all the same) and `AGENT_WEB_SEARCH_URL`
 * (a SearXNG instance, or any service answering its JSON search API; without it there is no WebSearch tool).
 */
export function webSettings(env: NodeJS.ProcessEnv = process.env): { allowedHosts: string[]; searchUrl: string | null } {
  return { allowedHosts: agentAllowedHosts(env), searchUrl: env.AGENT_WEB_SEARCH_URL?.trim() || null };
}

/** Where a web tool may connect for `url` (destinationOf), or a ToolError saying which rule refused it. */
async function destination(url: URL, context: ToolContext, alsoAllowed: string[] = []): Promise<string[]> {
  try {
    return await destinationOf(url, context.policy, [...webSettings().allowedHosts, ...alsoAllowed]);
  } catch (error) {
    if (error instanceof OutboundRefused) throw new ToolError(error.message);
    throw error;
  }
}

/** One GET to the vetted addresses (no redirect followed): the status, the headers and at most WEB_FETCH_MAX_BYTES of the body. */
function get(
  url: URL,
  addresses: string[],
  accept: string,
  signal: AbortSignal,
): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer; cut: boolean }> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      { method: 'GET', lookup: pinnedLookup(addresses), headers: { accept, 'user-agent': 'agent-platform-agent' }, signal, timeout: WEB_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let cut = false;
        res.on('data', (chunk: Buffer) => {
          if (cut) return;
          chunks.push(chunk);
          size += chunk.length;
          if (size >= WEB_FETCH_MAX_BYTES) {
            cut = true;
            res.destroy();
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).subarray(0, WEB_FETCH_MAX_BYTES), cut });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), cut }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${WEB_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end();
  });
}

const markdown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' }).remove(['script', 'style', 'noscript', 'iframe', 'template']);

export const webFetchTool: AgentTool = defineTool({
  name: 'WebFetch',
  description: [
    'Fetches a web page (http or https) and returns it as Markdown (HTML pages), or as it is (text, JSON), with its status.',
    `At most ${WEB_FETCH_MAX_CHARACTERS} characters are returned. Redirects are not followed: the result gives the address to fetch instead.`,
    "Private, loopback and cloud metadata addresses are refused, and so is what the organization's network policy leaves out.",
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      url: { type: 'string', description: 'The address of the page, http:// or https://.' },
      format: {
        type: 'string',
        enum: ['markdown', 'text', 'html'],
        description: 'markdown (the default) turns HTML into Markdown; text and html return it as it came.',
      },
      max_length: { type: 'integer', minimum: 1, description: `At most this many characters (default and most: ${WEB_FETCH_MAX_CHARACTERS}).` },
    },
    required: ['url'],
    additionalProperties: false,
  },
  async run(input, context) {
    const raw = requiredString(input, 'url', { nonEmpty: true });
    if (!URL.canParse(raw)) throw new ToolError(`${raw} is not an address (give an absolute http:// or https:// URL)`);
    const url = new URL(raw);
    if (url.username || url.password) throw new ToolError('Refused: an address with a user name or password in it is not fetched.');
    const format = optionalString(input, 'format') ?? 'markdown';
    const max = Math.min(optionalNumber(input, 'max_length', { integer: true, min: 1 }) ?? WEB_FETCH_MAX_CHARACTERS, WEB_FETCH_MAX_CHARACTERS);
    const addresses = await destination(url, context);
    const answer = await get(url, addresses, 'text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5', context.signal).catch(
      (error: Error) => {
        throw new ToolError(`${url.href} could not be fetched: ${error.message}`);
      },
    );
    if (answer.status >= 300 && answer.status < 400) {
      const location = answer.headers.location ? new URL(answer.headers.location, url).href : '(no address given)';
      return `${url.href} answered ${answer.status}: it redirects to ${location}. Redirects are not followed: fetch that address if it is the page you want.`;
    }
    const type = String(answer.headers['content-type'] ?? '');
    if (!/^(text\/|application\/(json|xml|xhtml\+xml|javascript)|[^;]*\+(json|xml))/i.test(type) && type !== '') {
      return { isError: true, content: `${url.href} answered ${answer.status} with ${type.split(';')[0]}, which is not text; it was not read.` };
    }
    const text = answer.body.toString('utf8');
    const body = format === 'markdown' && /html/i.test(type) ? markdown.turndown(text) : text;
    const shown = body.length > max ? `${body.slice(0, max)}\n[cut: the page has ${body.length} characters, only the first ${max} are shown]` : body;
    const note = answer.cut ? `\n[cut: only the first ${WEB_FETCH_MAX_BYTES / 1024 / 1024} MiB of the page were read]` : '';
    return { isError: answer.status >= 400, content: `${url.href} (${answer.status}${type ? `, ${type.split(';')[0]}` : ''})\n\n${shown}${note}` };
  },
});

/** The WebSearch tool, through the operator's search service (`AGENT_WEB_SEARCH_URL`, SearXNG's JSON API). */
export function webSearchTool(searchUrl: string): AgentTool {
  return defineTool({
    name: 'WebSearch',
    description: `Searches the web and returns the first ${SEARCH_RESULTS} results: title, address and a snippet each. Fetch a result with WebFetch to read it.`,
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'What to search for.' } },
      required: ['query'],
      additionalProperties: false,
    },
    async run(input, context) {
      const query = requiredString(input, 'query', { nonEmpty: true });
      const url = new URL(`${searchUrl.replace(/\/+$/, '')}/search`);
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      // The operator chose the search service: its host is allowed by name; the organization's allowedIps still apply.
      const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
      const addresses = await destination(url, { ...context, policy: { ...context.policy, sandbox: undefined } }, [`${url.hostname}:${port}`]);
      const answer = await get(url, addresses, 'application/json', context.signal).catch((error: Error) => {
        throw new ToolError(`The search service could not be reached: ${error.message}`);
      });
      if (answer.status !== 200) throw new ToolError(`The search service answered ${answer.status}.`);
      let results: Array<{ title?: unknown; url?: unknown; content?: unknown }>;
      try {
        results = (JSON.parse(answer.body.toString('utf8')) as { results?: typeof results }).results ?? [];
      } catch {
        throw new ToolError('The search service answered something that is not its JSON.');
      }
      const lines = results
        .filter((result) => typeof result.url === 'string')
        .slice(0, SEARCH_RESULTS)
        .map(
          (result, i) =>
            `${i + 1}. ${String(result.title ?? result.url)}\n   ${String(result.url)}${result.content ? `\n   ${String(result.content).slice(0, 300)}` : ''}`,
        );
      return lines.length ? lines.join('\n') : `No results for ${query}.`;
    },
  });
}
