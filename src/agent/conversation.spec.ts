import type { ContentBlock, Message } from '../contract/agent-channel';
import { toChatHistory } from './agent';

let made = 0;
/** A message as the channel hands it out, with the id and times the server gives it. */
const stored = (role: Message['role'], content: ContentBlock[], extra: Partial<Message> = {}): Message => {
  made++;
  return { id: `m${made}`, role, content, createdAt: made, updatedAt: made, ...extra };
};
const text = (role: Message['role'], value: string, extra: Partial<Message> = {}) => stored(role, [{ type: 'text', text: value }], extra);
const use = (id: string, name = 'Read', input: Record<string, unknown> = { file_path: 'a' }): ContentBlock => ({ type: 'tool_use', id, name, input });
const result = (toolUseId: string, content: Extract<ContentBlock, { type: 'tool_result' }>['content'] = 'ok'): ContentBlock => ({
  type: 'tool_result',
  toolUseId,
  content,
  isError: false,
});

describe('toChatHistory: stored messages back into the model conversation', () => {
  it('keeps user messages, answers with their tool calls, and the tool results, in order', () => {
    const history = toChatHistory([
      text('user', 'Fix it'),
      stored('assistant', [{ type: 'thinking', thinking: 'hm', signature: '' }, { type: 'text', text: 'Looking.' }, use('c1'), use('c2', 'LS', {})]),
      stored('tool', [
        result('c1', 'line 1'),
        result('c2', [
          { type: 'text', text: 'a.ts' },
          { type: 'text', text: 'b.ts' },
        ]),
      ]),
      text('assistant', 'Fixed.'),
    ]);
    expect(history).toEqual([
      { role: 'user', content: 'Fix it' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a"}' } },
          { id: 'c2', type: 'function', function: { name: 'LS', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'line 1' },
      { role: 'tool', tool_call_id: 'c2', content: 'a.ts\nb.ts' },
      { role: 'assistant', content: 'Fixed.' },
    ]);
  });

  it('leaves out system messages, what subagents did (hidden), and tool calls whose result was never recorded', () => {
    const history = toChatHistory([
      text('user', 'Go'),
      text('system', 'PreToolUse hook completed', { hookEventName: 'PreToolUse' }),
      stored('assistant', [use('task'), use('lost')]),
      stored('assistant', [use('inner', 'Create')], { hiddenFromUserViews: true }),
      stored('tool', [result('inner')], { hiddenFromUserViews: true }),
      stored('tool', [result('task', 'the report'), result('stray')]),
    ]);
    expect(history).toEqual([
      { role: 'user', content: 'Go' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'task', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a"}' } }] },
      { role: 'tool', tool_call_id: 'task', content: 'the report' },
    ]);
  });

  it('keeps the signed Anthropic thinking of an answer, for the Messages API to get back, and no other thinking', () => {
    const history = toChatHistory([
      text('user', 'Go'),
      stored('assistant', [
        { type: 'thinking', thinking: 'signed', signature: 'sig', signatureProvider: 'anthropic' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'thinking', thinking: 'reasoning', signature: '', signatureProvider: 'generic-chat-completion-api' },
        { type: 'text', text: 'Done.' },
      ]),
    ]);
    expect(history[1]).toEqual({
      role: 'assistant',
      content: 'Done.',
      thinking: [
        { thinking: 'signed', signature: 'sig' },
        { thinking: '', signature: '', redacted: 'opaque' },
      ],
    });
  });

  it('turns text files into lines the model reads, and keeps images beside the text for the model to see', () => {
    const history = toChatHistory([
      stored('user', [
        { type: 'text', text: 'See' },
        { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'document', source: { type: 'text', mediaType: 'text/plain', name: 'n.md', data: '# N' } },
      ]),
    ]);
    expect(history).toEqual([{ role: 'user', content: 'See\n\n[attached file n.md]\n# N', images: [{ mediaType: 'image/png', data: 'iVBORw0KGgo=' }] }]);
  });
});
