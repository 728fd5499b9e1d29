// One request at a time over a kept-alive connection, timed to the last byte of the body, with no timeout
// (fetch gives up on headers after 300 s, and a rollup trigger on a large database may take longer).
import { Buffer } from 'node:buffer';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** Resolves to `{ status, body, bytes, ms }`; `ms` runs from sending the request to the end of the response. */
export function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const ms = performance.now() - started;
        const buffer = Buffer.concat(chunks);
        resolve({ status: res.statusCode, body: buffer.toString('utf8'), bytes: buffer.length, ms });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function closeConnections() {
  agent.destroy();
}
