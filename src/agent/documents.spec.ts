import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extractText } from 'unpdf';
import { pdfOf } from '../../test/utils/fixtures/pdf';
import type { AgentPolicy, Message, Work } from '../contract/agent-channel';
import { defaultAgentPolicy } from '../contract/default-policy';
import { Agent } from './agent';
import { PdfText, PdfTexts } from './documents';
import type { ChatMessage, ModelAnswer, ModelApi } from './models';
import type { AgentChannel } from './platform-client';

// Counts the real extractions (pdf.js), wherever in the agent they are asked for.
jest.mock('unpdf', () => {
  const actual = jest.requireActual<typeof import('unpdf')>('unpdf');
  return { ...actual, extractText: jest.fn(actual.extractText) };
});
const extractions = extractText as jest.MockedFunction<typeof extractText>;

describe('PdfTexts: the text of PDFs, read once per agent process', () => {
  /** A reader that says which PDF it read, and counts its readings. */
  const reader = (length = 10) => {
    const read: string[] = [];
    const extract = async (base64: string): Promise<PdfText> => {
      read.push(base64);
      if (base64.startsWith('bad')) throw new Error('the PDF cannot be read: bad');
      return { pages: 1, text: base64.padEnd(length, '.') };
    };
    return { read, extract };
  };

  it('reads a PDF once, however often and however concurrently it is asked for', async () => {
    const { read, extract } = reader();
    const texts = new PdfTexts({ entries: 10, characters: 1_000 }, extract);
    const [first, second] = await Promise.all([texts.of('a'), texts.of('a')]);
    expect(await texts.of('a')).toEqual({ pages: 1, text: 'a.........' });
    expect([first, second]).toEqual([await texts.of('a'), await texts.of('a')]);
    await expect(texts.of('bad')).rejects.toThrow('cannot be read');
    await expect(texts.of('bad')).rejects.toThrow('cannot be read');
    expect(read).toEqual(['a', 'bad']);
  });

  it('keeps at most its entries, dropping the least recently used first', async () => {
    const { read, extract } = reader();
    const texts = new PdfTexts({ entries: 2, characters: 1_000 }, extract);
    await texts.of('a');
    await texts.of('b');
    await texts.of('a');
    await texts.of('c');
    await texts.of('a');
    await texts.of('c');
    expect(read).toEqual(['a', 'b', 'c']);
    await texts.of('b');
    expect(read).toEqual(['a', 'b', 'c', 'b']);
  });

  it('keeps at most its characters of text, and never a text longer than that alone', async () => {
    const { read, extract } = reader(40);
    const texts = new PdfTexts({ entries: 10, characters: 100 }, extract);
    for (const pdf of ['a', 'b', 'c']) await texts.of(pdf);
    // 120 characters: the oldest went.
    await texts.of('c');
    await texts.of('b');
    expect(read).toEqual(['a', 'b', 'c']);
    await texts.of('a');
    expect(read).toEqual(['a', 'b', 'c', 'a']);

    const long = new PdfTexts({ entries: 10, characters: 30 }, extract);
    await long.of('a');
    await long.of('a');
    expect(read.slice(4)).toEqual(['a', 'a']);
  });
});

describe('the agent, with a model that does not read PDFs', () => {
  const folders: string[] = [];
  const home = process.env.HOME;
  afterAll(() => {
    process.env.HOME = home;
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });
  const folder = () => {
    const made = mkdtempSync(join(tmpdir(), 'ap-documents-'));
    folders.push(made);
    return made;
  };

  /** A channel that hands the agent the open default policy and takes what it writes. */
  const channel = (policy: AgentPolicy): AgentChannel => {
    let seq = 0;
    const stored = (sessionId: string, messages: unknown[]) => messages.map((message) => ({ ...(message as object), id: `w${++seq}`, sessionId, seq }));
    return {
      connect: () => Promise.reject(new Error('not connected')),
      claim: () => Promise.resolve(null),
      policy: () => Promise.resolve(policy),
      cloudModelAccess: () => Promise.reject(new Error('no cloud models')),
      existingSessions: () => Promise.resolve([]),
      conversation: () => Promise.resolve({ messages: [], nextCursor: null }),
      append: (sessionId: string, _turnId: string, messages: unknown[]) => Promise.resolve({ messages: stored(sessionId, messages) }),
      usage: () => Promise.resolve({}),
      heartbeat: () => Promise.resolve({ interrupted: false }),
      delta: () => Promise.resolve(),
      requestApproval: () => Promise.reject(new Error('no approvals')),
      awaitApproval: () => Promise.reject(new Error('no approvals')),
      endTurn: () => Promise.resolve({}),
    } as unknown as AgentChannel;
  };

  const work = (sessionId: string, turn: number, content: Message['content']): Work =>
    ({
      turnId: `turn-${turn}`,
      sessionId,
      leaseExpiresAt: Date.now() + 60_000,
      session: { sessionId, title: null, status: 'running', createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' },
      messages: [{ id: `u${turn}`, sessionId, seq: turn, role: 'user', content, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' }],
      messagesCursor: null,
    }) as unknown as Work;

  it('reads an attached PDF once for the whole session, not again at each turn', async () => {
    process.env.HOME = folder();
    const sent: ChatMessage[][] = [];
    const answer: ModelAnswer = {
      text: 'Noted.',
      toolCalls: [],
      usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0, thinkingTokens: 0 },
      finishReason: 'stop',
    };
    const model: ModelApi = {
      provider: 'generic-chat-completion-api',
      config: { baseUrl: 'http://127.0.0.1:9/v1', model: 'scripted-1' },
      complete: (messages) => {
        sent.push(messages);
        return Promise.resolve(answer);
      },
    };
    const lines: string[] = [];
    const agent = new Agent({ client: channel(defaultAgentPolicy()), model, workspace: folder(), stateDir: folder(), log: (line) => lines.push(line) });
    const pdf = pdfOf('Invoices are due in 30 days.').toString('base64');
    extractions.mockClear();

    await agent.turn(work('s-1', 1, [{ type: 'document', source: { type: 'base64', mediaType: 'application/pdf', data: pdf, name: 'terms.pdf' } }]));
    await agent.turn(work('s-1', 2, [{ type: 'text', text: 'And the penalty?' }]));

    expect(lines.filter((line) => line.includes('failed'))).toEqual([]);
    // Both turns sent the PDF as its text: the second from what the first read.
    expect(sent).toHaveLength(2);
    for (const messages of sent) expect(messages.find((message) => message.role === 'user')?.content).toContain('Invoices are due in 30 days.');
    expect(extractions).toHaveBeenCalledTimes(1);
  });
});
