import { toChatHistory } from './agent';
import { ChannelMessage } from './platform-client';

const text = (role: ChannelMessage['role'], value: string, extra: Record<string, unknown> = {}): ChannelMessage => ({
  role,
  content: [{ type: 'text', text: value }],
  ...extra,
});
const use = (id: string, name = 'Read', input: unknown = { file_path: 'a' }) => ({ type: 'tool_use', id, name, input });
const result = (toolUseId: string, content: unknown = 'ok') => ({ type: 'tool_result', toolUseId, content, isError: false });

describe('toChatHistory: stored messages back into the model conversation', () => {
  it('keeps user messages, answers with their tool calls, and the tool results, in order', () => {
    const history = toChatHistory([
      text('user', 'Fix it'),
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm' }, { type: 'text', text: 'Looking.' }, use('c1'), use('c2', 'LS', {})] },
      {
        role: 'tool',
        content: [
          result('c1', 'line 1'),
          result('c2', [
            { type: 'text', text: 'a.ts' },
            { type: 'text', text: 'b.ts' },
          ]),
        ],
      },
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
      { role: 'assistant', content: [use('task'), use('lost')] },
      { role: 'assistant', content: [use('inner', 'Create')], hiddenFromUserViews: true },
      { role: 'tool', content: [result('inner')], hiddenFromUserViews: true },
      { role: 'tool', content: [result('task', 'the report'), result('stray')] },
    ]);
    expect(history).toEqual([
      { role: 'user', content: 'Go' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'task', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a"}' } }] },
      { role: 'tool', tool_call_id: 'task', content: 'the report' },
    ]);
  });

  it('turns attachments into the lines the model can read', () => {
    const history = toChatHistory([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'See' },
          { type: 'image', source: {} },
          { type: 'document', source: { type: 'text', name: 'n.md', data: '# N' } },
        ],
      },
    ]);
    expect(history).toEqual([{ role: 'user', content: 'See\n\n[an image is attached; this agent cannot see images]\n\n[attached file n.md]\n# N' }]);
  });
});
