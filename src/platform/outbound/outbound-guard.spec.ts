import { once } from 'node:events';
import { createServer, get } from 'node:http';
import { AddressInfo } from 'node:net';
import { pinnedLookup } from '../../contract/address-policy';

describe('pinnedLookup', () => {
  it('connects to the vetted address whatever the name would resolve to now (no second lookup to rebind)', async () => {
    const server = createServer((_, res) => res.end('reached'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      // `.invalid` never resolves (RFC 6761): reaching the server proves the name was not looked up.
      const body = await new Promise<string>((resolve, reject) => {
        get({ host: 'rebinding.invalid', port, path: '/', lookup: pinnedLookup(['127.0.0.1']), agent: false }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve(text));
        }).on('error', reject);
      });
      expect(body).toBe('reached');
    } finally {
      server.close();
    }
  });

  it('answers only vetted addresses of the family asked for, and fails when there is none', () => {
    const lookup = pinnedLookup(['127.0.0.1', '::1']);
    const answers: unknown[] = [];
    lookup('x', { all: true }, (error, addresses) => answers.push(error ?? addresses));
    lookup('x', { family: 6 }, (error, address, family) => answers.push(error ?? [address, family]));
    lookup('x', { family: 4, all: false }, (error, address, family) => answers.push(error ?? [address, family]));
    expect(answers).toEqual([
      [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ],
      ['::1', 6],
      ['127.0.0.1', 4],
    ]);
    pinnedLookup(['127.0.0.1'])('x', { family: 6 }, (error) => expect(error).toMatchObject({ code: 'ENOTFOUND' }));
  });
});
