import { OutputLines, redactTokens } from './agent-output';

const TOKEN = `cpt_${'a1B2_-'.repeat(7)}x`;

describe('agent output', () => {
  it('masks the agent token and anything shaped like one', () => {
    expect(redactTokens(`Bearer ${TOKEN} refused`, TOKEN)).toBe('Bearer [agent token] refused');
    expect(redactTokens('old cpt_ZZZZZZZZZZZZZZZZZZZZZZZZ here', TOKEN)).toBe('old cpt_[redacted] here');
    expect(redactTokens('no secret here', TOKEN)).toBe('no secret here');
  });

  it('emits whole lines only, so a token split across chunks is still masked', () => {
    const lines: string[] = [];
    const output = new OutputLines(
      (text) => redactTokens(text, TOKEN),
      (line) => lines.push(line),
    );
    output.push(`first\r\nsecond ${TOKEN.slice(0, 10)}`);
    output.push(`${TOKEN.slice(10)} end\n\nlast`);
    expect(lines).toEqual(['first', 'second [agent token] end']);
    output.end();
    expect(lines).toEqual(['first', 'second [agent token] end', 'last']);
  });

  it('cuts a line without end into pieces, never through a token', () => {
    const lines: string[] = [];
    const output = new OutputLines(
      (text) => redactTokens(text, TOKEN),
      (line) => lines.push(line),
    );
    const filler = 'x'.repeat(8 * 1024 - 20);
    output.push(filler + TOKEN.slice(0, 30));
    output.push(TOKEN.slice(30) + ' tail');
    output.end();
    expect(lines.join('')).toBe(`${filler}[agent token] tail`);
    expect(lines.join('')).not.toContain(TOKEN.slice(4, 20));
  });

  it('moves the cut of a long line back to before a token that would straddle it', () => {
    const lines: string[] = [];
    const output = new OutputLines(
      (text) => redactTokens(text, TOKEN),
      (line) => lines.push(line),
    );
    // 8,100 + 47 + 100 characters: the cut 128 from the end would fall 19 characters into the token.
    output.push(`${'x'.repeat(8_100)}${TOKEN}${'y'.repeat(100)}`);
    output.end();
    expect(lines).toEqual(['x'.repeat(8_100), `[agent token]${'y'.repeat(100)}`]);
  });
});
