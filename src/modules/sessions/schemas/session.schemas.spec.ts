import { RequestError } from '../../../platform/http/domain-error';
import { sessionSchemas } from './session.schemas';

function problems(schema: string, value: unknown): Array<{ field: string; message: string }> {
  try {
    sessionSchemas.check(schema, value);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(RequestError);
    return (error as RequestError).metadata.errors as Array<{ field: string; message: string }>;
  }
}

describe('session schemas', () => {
  it('all compile', () => {
    expect(() => sessionSchemas.compileAll()).not.toThrow();
  });

  it('accept every content block type the spec lists', () => {
    const content = [
      { type: 'text', text: 'hi', id: 'b1' },
      { type: 'image', source: { type: 'base64', data: 'AAAA', mediaType: 'image/gif' } },
      { type: 'thinking', thinking: 'hmm', signature: 's', signatureProvider: 'unknown', durationMs: 0 },
      { type: 'redacted_thinking', data: 'xx' },
      { type: 'tool_use', id: 't1', name: 'bash', input: { anything: [1, { deep: true }] }, thoughtSignature: 'ts' },
      { type: 'tool_result', toolUseId: 't1', isError: false, content: 'text output' },
      {
        type: 'tool_result',
        toolUseId: 't1',
        content: [
          { type: 'text', text: 'a' },
          { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'd' } },
        ],
      },
      { type: 'document', source: { type: 'base64', mediaType: 'application/pdf', data: 'AAAA', parsedData: 'p', name: 'n', path: '/p' } },
    ];
    expect(problems('AgentMessageInput', { role: 'assistant', content })).toEqual([]);
  });

  it('name the exact path of an unknown property in a nested block', () => {
    expect(
      problems('AgentMessageInput', { role: 'tool', content: [{ type: 'tool_result', toolUseId: 't', content: [{ type: 'text', text: 'a', extra: 1 }] }] }),
    ).toEqual([{ field: 'content[0].content[0].extra', message: 'is not an accepted field' }]);
  });

  it('name an unknown block type and list the known ones', () => {
    const [problem] = problems('AgentMessageInput', { role: 'assistant', content: [{ type: 'video' }] });
    expect(problem.field).toBe('content[0].type');
    expect(problem.message).toMatch(/tool_use/);
  });

  it('name missing required fields', () => {
    expect(problems('AgentMessageInput', { role: 'assistant', content: [{ type: 'thinking', thinking: 'x' }] })).toEqual([
      { field: 'content[0].signature', message: 'is required' },
    ]);
    expect(problems('AddMessageBody', {})).toEqual([{ field: 'text', message: 'is required' }]);
  });

  it('refuse a body that is not an object', () => {
    expect(problems('AddMessageBody', [])).toEqual([{ field: 'body', message: 'must be a JSON object' }]);
    expect(problems('AddMessageBody', undefined)).toEqual([{ field: 'body', message: 'must be a JSON object' }]);
  });

  it('allow vendorAPhase to be null but not another value', () => {
    expect(problems('AgentMessageInput', { role: 'assistant', content: [], vendorAPhase: null })).toEqual([]);
    expect(problems('AgentMessageInput', { role: 'assistant', content: [], vendorAPhase: 'draft' })[0].field).toBe('vendorAPhase');
  });

  it('keep server-maintained settings out of a new session', () => {
    expect(problems('CreateSessionBody', { sessionSettings: { tokenUsage: {} } })).toEqual([
      { field: 'sessionSettings.tokenUsage', message: 'is not an accepted field' },
    ]);
  });
});
