import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { endToEnd } from '../host/egress';

/** The only calls forwarded: the agent channel. A computer's agent reaches nothing else of the server through its worker. */
const AGENT_CHANNEL = '/api/v0/agent/';

/**
 * What a managed computer's `api.sock` reaches on a worker (`api: {kind: 'http', handle}`, src/host/egress.ts): each
 * request of the agent channel forwarded to the server at `baseUrl`, both bodies streamed as they come (a long poll, an
 * event stream), with the agent's own Authorization as it sent it and no credential of the worker's. Any other path is
 * a 404, and so is a path that could mean another once normalized (`..`, `.`, `//`, their percent-encodings, a
 * backslash) or a request in absolute form (`GET http://elsewhere/...`). 502 when the server cannot be reached.
 */
export function uplink(baseUrl: string): (req: IncomingMessage, res: ServerResponse) => void {
  const base = new URL(baseUrl);
  const send = base.protocol === 'https:' ? httpsRequest : httpRequest;
  const prefix = base.pathname.replace(/\/+$/, '');
  return (req, res) => {
    const target = req.url ?? '';
    const queryAt = target.indexOf('?');
    const path = queryAt === -1 ? target : target.slice(0, queryAt);
    if (!isAgentChannelPath(path)) {
      req.resume();
      return answer(res, 404, 'Not Found', 'not_found', 'Only the agent channel (/api/v0/agent/...) is reachable from a computer.');
    }
    const outgoing = send({
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port,
      method: req.method,
      path: `${prefix}${target}`,
      headers: [...endToEnd(req, ['host']), 'Host', base.host],
      setHost: false,
    });
    outgoing.on('response', (response) => {
      res.writeHead(response.statusCode ?? 502, response.statusMessage, endToEnd(response));
      // An event stream's first bytes are its headers: sent now, not with the first event.
      res.flushHeaders();
      response.pipe(res);
      response.on('error', () => res.destroy());
    });
    outgoing.on('error', (error) => {
      if (res.headersSent) res.destroy();
      else answer(res, 502, 'Bad Gateway', 'server_unreachable', `The platform's server cannot be reached from this worker: ${error.message}`);
    });
    // The agent gone (its turn cut short, the computer stopped): so is its request upstream.
    res.on('close', () => outgoing.destroy());
    req.pipe(outgoing);
  };
}

/**
 * Whether `path` names a call of the agent channel as it is, with nothing a server could normalize into another path:
 * every segment non-empty, none `.` or `..`, written or percent-encoded, no encoded slash or backslash, no control character.
 */
export function isAgentChannelPath(path: string): boolean {
  if (!path.startsWith(AGENT_CHANNEL)) return false;
  return path
    .slice(1)
    .split('/')
    .every((segment) => {
      let decoded: string;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        return false;
      }
      return decoded !== '' && decoded !== '.' && decoded !== '..' && ![...decoded].some(isSeparatorOrControl);
    });
}

function isSeparatorOrControl(char: string): boolean {
  const code = char.charCodeAt(0);
  return char === '/' || char === '\\' || code < 0x20 || code === 0x7f;
}

/** An answer of the uplink's own, in the shape of the API's errors. */
function answer(res: ServerResponse, status: number, title: string, code: string, detail: string): void {
  const body = JSON.stringify({ detail, status, title, metadata: { code } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
