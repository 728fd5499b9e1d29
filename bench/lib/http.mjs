// One request at a time over a kept-alive connection, timed to the last byte of the body, with no timeout
// (fetch gives up on headers after 300 s, and a rollup trigger on a large database may take longer).
import { Buffer } from 'node:buffer';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

const DECODE = { br: brotliDecompressSync, gzip: gunzipSync };

/**
 * Resolves to `{ status, body, bytes, ms, encoding }`; `ms` runs from sending the request to the end of the response,
 * `bytes` counts the body as it came (compressed, when the server compressed it), `body` is the text, decoded.
 */
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
        const encoding = res.headers['content-encoding'];
        const decoded = DECODE[encoding]?.(buffer) ?? buffer;
        resolve({ status: res.statusCode, body: decoded.toString('utf8'), bytes: buffer.length, ms, encoding: encoding ?? 'identity' });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function closeConnections() {
  agent.destroy();
}
