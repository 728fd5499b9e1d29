import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestApp } from './test-app';

export interface ClaimAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { work?: { sessionId: string; turnId: string } | null; [field: string]: unknown };
  /** When the answer was read whole (Date.now()). */
  at: number;
}

/**
 * A claim over a raw connection, which the test can cut as a killed agent would: `answer` is
 * what the server answered, or 'cut' when the connection went first.
 */
export function openClaim(t: TestApp, auth: { Authorization: string }, body: object) {
  const { port } = t.app.getHttpServer().address() as AddressInfo;
  const payload = JSON.stringify(body);
  const req = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/api/v0/agent/claims',
    headers: { ...auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
  });
  const answer = new Promise<ClaimAnswer | 'cut'>((resolve) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as ClaimAnswer['body'], at: Date.now() }));
    });
    req.on('error', () => resolve('cut'));
    req.on('close', () => resolve('cut'));
  });
  req.end(payload);
  return { cut: () => req.destroy(), answer };
}

/** The claim's answer; fails the test when the connection was cut first. */
export async function answered(claim: { answer: Promise<ClaimAnswer | 'cut'> }): Promise<ClaimAnswer> {
  const answer = await claim.answer;
  if (answer === 'cut') throw new Error('the claim was cut');
  return answer;
}
