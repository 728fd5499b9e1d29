import { ShieldedOutput } from './live-output';

// Built at run time, so that no scanner of this repository's history flags these test values.
const github = ['ghp', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'].join('_');
const keyLines = [
  ['-----BEGIN', 'PRIVATE KEY-----'].join(' '),
  ...`MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ${'Cx9'.repeat(60)}`.match(/.{1,64}/g)!,
  ['-----END', 'PRIVATE KEY-----'].join(' '),
];

/** Waits (polling, no fixed sleep) until the scans have passed on what `done` looks for. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(done()).toBe(true);
}

describe('Agent Shield: live tool output', () => {
  it('passes on whole lines once scanned: a credential cut across writes is redacted, and an unfinished line waits', async () => {
    const sent: string[] = [];
    const output = new ShieldedOutput((text) => sent.push(text));
    output.write('building\ntoken: ');
    output.write(`${github.slice(0, 10)}`);
    output.write(`${github.slice(10)} used\nno newline yet`);
    await until(() => sent.join('').includes('used'));
    expect(sent.join('')).toBe('building\ntoken: [REDACTED GITHUB_TOKEN] used\n');
    await output.end();
    expect(sent.join('')).toBe('building\ntoken: [REDACTED GITHUB_TOKEN] used\nno newline yet');
    expect(sent.some((piece) => piece.includes(github.slice(4, 14)))).toBe(false);
  });

  it("holds a private key's lines from BEGIN to END, so that the scan finds it whole", async () => {
    const sent: string[] = [];
    const output = new ShieldedOutput((text) => sent.push(text));
    output.write('$ cat key.pem\n');
    for (const line of keyLines.slice(0, -1)) output.write(`${line}\n`);
    await until(() => sent.length > 0);
    // Its lines, each harmless alone, were written with the first one but are not shown before the END line lets the scan see the key.
    expect(sent.join('')).toBe('$ cat key.pem\n');
    output.write(`${keyLines.at(-1)}\ndone\n`);
    await output.end();
    expect(sent.join('')).toBe('$ cat key.pem\n[REDACTED PrivateKey]\ndone\n');
  });

  it('withholds a line too long to hold, and goes on with the next', async () => {
    const sent: string[] = [];
    const output = new ShieldedOutput((text) => sent.push(text));
    output.write('x'.repeat(10_000));
    output.write(`${'y'.repeat(10_000)} ${github}`);
    output.write(' tail of the long line\nnext line\n');
    await output.end();
    expect(sent.join('')).toBe('next line\n');
  });
});
