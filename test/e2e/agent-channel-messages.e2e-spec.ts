import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { agentChannelFixture, expectInvalid, MessageView, SessionView, UUID, Work } from '../utils/fixtures/agent-channel';

/** What an agent appends to its turn (messages) and reports (usage), over real HTTP. */

/** A 1x1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

describe('Agent channel', () => {
  const fixture = agentChannelFixture();
  const { api } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe('appending agent messages', () => {
    const assistant = {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants the file.', signature: 'sig-1', signatureProvider: 'unknown', durationMs: 12 },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'Let me read it.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.txt', nested: { deep: [1, 2] } } },
      ],
      modelId: 'model-x',
      reasoningEffort: 'high',
      isUserVisible: true,
    };
    const tool = {
      role: 'tool',
      content: [
        { type: 'tool_result', toolUseId: 'toolu_1', content: 'the file text' },
        {
          type: 'tool_result',
          toolUseId: 'toolu_2',
          isError: false,
          content: [
            { type: 'text', text: 'a screenshot' },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG } },
            { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'notes', name: 'notes.md', mime: 'text/markdown' } },
          ],
        },
      ],
    };
    const system = {
      role: 'system',
      content: [{ type: 'text', text: 'A hook ran.' }],
      hookEventName: 'PostToolUse',
      hookMatcher: 'Read',
      hookCommands: [{ command: 'echo hi', timeout: 30 }],
      hookStatus: 'completed',
      hookResults: [
        { exitCode: 0, stdout: 'hi\n', stderr: '' },
        { exitCode: 1, stdout: '', stderr: 'oops', suppressOutput: true },
      ],
      hookToolCallId: 'toolu_1',
      hookStartTime: 1000,
      hookEndTime: 1200,
    };

    it('stores assistant, tool and system messages in order, chained by parentId, exactly as given', async () => {
      const { owner, sessionId, messageId, turnId } = await api.runningSession({ messageHistory: true });
      const before = Date.now();
      const res = await api.append(owner, sessionId, { turnId, messages: [assistant, tool, system] });
      expect(res.status).toBe(200);
      const added = res.body.messages as MessageView[];
      expect(added).toHaveLength(3);
      for (const m of added) {
        expect(m.id).toMatch(UUID);
        expect(m.createdAt).toBeGreaterThanOrEqual(before);
        expect(m.updatedAt).toBe(m.createdAt);
      }
      expect(new Set(added.map((m) => m.id)).size).toBe(3);
      const strip = ({ id: _id, createdAt: _c, updatedAt: _u, parentId: _p, ...rest }: MessageView) => rest;
      expect(added.map(strip)).toEqual([assistant, tool, system]);
      expect(added.map((m) => m.parentId)).toEqual([messageId, added[0].id, added[1].id]);
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(4);

      // Without parentId a message follows the previous one; a given parentId is honoured.
      const more = await api.append(owner, sessionId, {
        turnId,
        messages: [
          { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'An aside on the first.' }], parentId: added[0].id },
          { role: 'assistant', content: [] },
        ],
      });
      expect(more.status).toBe(200);
      const [done, aside, empty] = more.body.messages as MessageView[];
      expect(done.parentId).toBe(added[2].id);
      expect(aside.parentId).toBe(added[0].id);
      expect(empty.parentId).toBe(aside.id);
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(7);

      const stored = await api.listMessages(owner, sessionId);
      expect(stored.map((m) => m.id)).toEqual([messageId, ...added.map((m) => m.id), done.id, aside.id, empty.id]);
      expect(stored.slice(1)).toEqual([...added, ...(more.body.messages as MessageView[])]);
      expect(stored[0]).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'hello' }] });
      expect(stored[0].parentId).toBeUndefined();
    });

    it('the first agent message follows the newest message, a user message sent during the turn included', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const during = await api.say(owner, sessionId, 'one more thing', 'running');
      const res = await api.append(owner, sessionId, { turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'ok' }] }] });
      expect(res.body.messages[0].parentId).toBe(during);
    });

    it('concurrent appends of one turn keep the count and the parent chain exact', async () => {
      const { owner, sessionId, messageId, turnId } = await api.runningSession({ messageHistory: true });
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          api.append(owner, sessionId, {
            turnId,
            messages: [
              { role: 'assistant', content: [{ type: 'text', text: `a${i}` }] },
              { role: 'tool', content: [{ type: 'tool_result', toolUseId: `t${i}`, content: `r${i}` }] },
            ],
          }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(21);
      const stored = await api.listMessages(owner, sessionId);
      expect(stored).toHaveLength(21);
      // One linear chain, in stored order, and each request's two messages next to each other.
      expect(stored.map((m) => m.parentId)).toEqual([undefined, messageId, ...stored.slice(1, -1).map((m) => m.id)]);
      for (const r of results) {
        const [a, b] = r.body.messages as MessageView[];
        expect(stored.findIndex((m) => m.id === b.id)).toBe(stored.findIndex((m) => m.id === a.id) + 1);
      }
    });

    it('a NUL character or a lone surrogate in a message answers 200 or 400, never 500', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const cases: Array<[string, Record<string, unknown>]> = [
        ['NUL in a text block', { role: 'assistant', content: [{ type: 'text', text: 'a\u0000b' }] }],
        [
          'NUL in a tool result (binary file output)',
          { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'u', content: 'PK\u0003\u0004\u0000\u0000' }] },
        ],
        ['NUL in tool_use input', { role: 'assistant', content: [{ type: 'tool_use', id: 'u', name: 'Write', input: { data: '\u0000' } }] }],
        ['NUL in a hook result', { role: 'system', content: [], hookResults: [{ exitCode: 0, stdout: 'x\u0000', stderr: '' }] }],
        ['a lone surrogate in a text block', { role: 'assistant', content: [{ type: 'text', text: 'cut emoji \ud83d' }] }],
      ];
      const problems: string[] = [];
      for (const [what, message] of cases) {
        const res = await api.append(owner, sessionId, { turnId, messages: [message] });
        if (res.status !== 200 && res.status !== 400) problems.push(`${what}: ${res.status} ${res.body?.metadata?.code}`);
      }
      const usage = await api.usage(owner, sessionId, { turnId, model: 'model\u0000x', inputTokens: 1 });
      if (usage.status !== 200 && usage.status !== 400) problems.push(`NUL in a usage model: ${usage.status} ${usage.body?.metadata?.code}`);
      expect(problems).toEqual([]);
    });

    it('rejects a parentId that is not a message of the session, appending nothing', async () => {
      const { owner, sessionId, turnId } = await api.runningSession({ messageHistory: true });
      const other = await api.runningSession();
      const text = { role: 'assistant', content: [{ type: 'text', text: 'x' }] };
      for (const parentId of [randomUUID(), 'not-a-uuid', other.messageId]) {
        const res = await api.append(owner, sessionId, { turnId, messages: [text, { ...text, parentId }] });
        expectInvalid(res, 'messages[1].parentId', 'parent_message_not_found');
      }
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(1);
      expect(await api.listMessages(owner, sessionId)).toHaveLength(1);
    });

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['role user', { role: 'user', content: [] }, 'messages[0].role'],
      ['an unknown role', { role: 'robot', content: [] }, 'messages[0].role'],
      ['no content', { role: 'assistant' }, 'messages[0].content'],
      ['server-assigned id', { role: 'assistant', content: [], id: randomUUID() }, 'messages[0].id'],
      ['userMessageSource', { role: 'assistant', content: [], userMessageSource: 'web' }, 'messages[0].userMessageSource'],
      ['an unknown message field', { role: 'assistant', content: [], foo: 1 }, 'messages[0].foo'],
      ['a bad hookStatus', { role: 'system', content: [], hookStatus: 'done' }, 'messages[0].hookStatus'],
      ['a hook command without command', { role: 'system', content: [], hookCommands: [{ timeout: 3 }] }, 'messages[0].hookCommands[0].command'],
      ['an unknown hook command field', { role: 'system', content: [], hookCommands: [{ command: 'x', foo: 1 }] }, 'messages[0].hookCommands[0].foo'],
      ['a hook result without stderr', { role: 'system', content: [], hookResults: [{ exitCode: 0, stdout: '' }] }, 'messages[0].hookResults[0].stderr'],
      ['an unknown block type', { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'video' }] }, 'messages[0].content[1].type'],
      ...(
        [
          ['text', { type: 'text', text: 'a' }],
          ['image', { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG } }],
          ['thinking', { type: 'thinking', thinking: 't', signature: 's' }],
          ['redacted_thinking', { type: 'redacted_thinking', data: 'd' }],
          ['tool_use', { type: 'tool_use', id: 'u', name: 'n', input: {} }],
          ['tool_result', { type: 'tool_result', toolUseId: 'u' }],
          ['document', { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'x' } }],
        ] as Array<[string, Record<string, unknown>]>
      ).map(([type, block]): [string, Record<string, unknown>, string] => [
        `an unknown field in a ${type} block`,
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'first' },
            { ...block, foo: 1 },
          ],
        },
        'messages[0].content[1].foo',
      ]),
      [
        'an unknown field in an image source',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG, foo: 1 } }] },
        'messages[0].content[0].source.foo',
      ],
      [
        'an unknown field in a block inside a tool result',
        { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'u', content: [{ type: 'text', text: 'a', foo: 1 }] }] },
        'messages[0].content[0].content[0].foo',
      ],
      ['a thinking block without signature', { role: 'assistant', content: [{ type: 'thinking', thinking: 't' }] }, 'messages[0].content[0].signature'],
      ['a tool_use block without input', { role: 'assistant', content: [{ type: 'tool_use', id: 'u', name: 'n' }] }, 'messages[0].content[0].input'],
      [
        'a negative thinking durationMs',
        { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's', durationMs: -1 }] },
        'messages[0].content[0].durationMs',
      ],
      [
        'an image that is not base64',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'not base64!' } }] },
        'messages[0].content[0].source.data',
      ],
      [
        'an image whose bytes are not its media type',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/jpeg', data: PNG } }] },
        'messages[0].content[0].source.data',
      ],
      [
        'an unpadded base64 image',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PNG.replace(/=+$/, '') } }] },
        'messages[0].content[0].source.data',
      ],
      [
        'a bad image inside a tool result',
        {
          role: 'tool',
          content: [
            {
              type: 'tool_result',
              toolUseId: 'u',
              content: [
                { type: 'text', text: 'a' },
                { type: 'image', source: { type: 'base64', mediaType: 'image/gif', data: PNG } },
              ],
            },
          ],
        },
        'messages[0].content[0].content[1].source.data',
      ],
      [
        'an unsupported image media type',
        { role: 'assistant', content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/bmp', data: PNG } }] },
        'messages[0].content[0].source.mediaType',
      ],
    ];

    it('rejects invalid messages with 400 naming the path, appending nothing', async () => {
      const { owner, sessionId, turnId } = await api.runningSession();
      const problems: string[] = [];
      for (const [what, message, field] of invalid) {
        const res = await api.append(owner, sessionId, { turnId, messages: [message] });
        const fields = (res.body?.metadata?.errors ?? []).map((e: { field: string }) => e.field);
        if (res.status !== 400 || !fields.includes(field) || !String(res.body.detail).includes(field)) {
          problems.push(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
        }
      }
      expect(problems).toEqual([]);
      expectInvalid(await api.append(owner, sessionId, { turnId, messages: [] }), 'messages');
      expectInvalid(await api.append(owner, sessionId, { messages: [{ role: 'assistant', content: [] }] }), 'turnId');
      expect((await api.getSession(owner, sessionId)).messageCount).toBe(1);
    });
  });

  describe('usage reports', () => {
    async function dailyRows(organizationId: string) {
      const rows = (await t.app.get(DataSource).query(
        `SELECT day::text AS day, user_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, thinking_tokens
         FROM token_usage_daily WHERE organization_id = $1 ORDER BY model`,
        [organizationId],
      )) as Array<Record<string, string | number>>;
      return rows.map((r) => ({
        day: r.day,
        userId: r.user_id,
        model: r.model,
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        cacheCreationTokens: Number(r.cache_creation_tokens),
        cacheReadTokens: Number(r.cache_read_tokens),
        thinkingTokens: Number(r.thinking_tokens),
      }));
    }

    it('accumulate across reports and models in the session and in the daily totals per model of the session’s owner', async () => {
      const org = await createOrganization(t);
      const member = await createUser(t, Role.Member, org);
      const agent = await createUser(t, Role.Manager, org);
      const sessions = [await api.createSession(member), await api.createSession(member)];
      for (const s of sessions) await api.say(member, s.sessionId, 'count my tokens');
      const days = new Set([new Date().toISOString().slice(0, 10)]);
      const [w1, w2] = [(await api.claim(agent))!, (await api.claim(agent))!];
      expect([w1.sessionId, w2.sessionId]).toEqual(sessions.map((s) => s.sessionId));

      const report = async (w: Work, body: object) => {
        const res = await api.usage(agent, w.sessionId, { turnId: w.turnId, ...body });
        expect(res.status).toBe(200);
        return res.body.session as SessionView;
      };
      await report(w1, { model: 'model-a', inputTokens: 100, outputTokens: 50, cacheCreationTokens: 10, cacheReadTokens: 5, thinkingTokens: 7 });
      await report(w1, { model: 'model-b', inputTokens: 1, outputTokens: 2 });
      const s1 = await report(w1, {
        model: 'model-a',
        inputTokens: 3,
        outputTokens: 4,
        cacheCreationTokens: 0,
        cacheReadTokens: 1_000_000_000_000,
        thinkingTokens: 1,
      });
      const total1 = { inputTokens: 104, outputTokens: 56, cacheCreationTokens: 10, cacheReadTokens: 1_000_000_000_005, thinkingTokens: 8 };
      expect(s1).toMatchObject({ sessionId: w1.sessionId, status: 'running', sessionSettings: { tokenUsage: total1 } });
      expect((await api.getSession(member, w1.sessionId)).sessionSettings?.tokenUsage).toEqual(total1);
      const s2 = await report(w2, { model: 'model-a', inputTokens: 1000 });
      expect(s2.sessionSettings?.tokenUsage).toEqual({ inputTokens: 1000, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 });
      days.add(new Date().toISOString().slice(0, 10));

      const rows = await dailyRows(org.id);
      expect(rows).toHaveLength(2);
      expect(days.has(String(rows[0].day))).toBe(true);
      expect(rows).toEqual([
        {
          day: rows[0].day,
          userId: member.userId,
          model: 'model-a',
          inputTokens: 1103,
          outputTokens: 54,
          cacheCreationTokens: 10,
          cacheReadTokens: 1_000_000_000_005,
          thinkingTokens: 8,
        },
        {
          day: rows[0].day,
          userId: member.userId,
          model: 'model-b',
          inputTokens: 1,
          outputTokens: 2,
          cacheCreationTokens: 0,
          cacheReadTokens: 0,
          thinkingTokens: 0,
        },
      ]);
    });

    it('concurrent reports of one turn all count', async () => {
      const { org, owner, sessionId, turnId } = await api.runningSession();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => api.usage(owner, sessionId, { turnId, model: i % 2 ? 'odd' : 'even', inputTokens: 1, outputTokens: i })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
      expect((await api.getSession(owner, sessionId)).sessionSettings?.tokenUsage).toEqual({
        inputTokens: 12,
        outputTokens: 66,
        cacheCreationTokens: 0,
        cacheReadTokens: 0,
        thinkingTokens: 0,
      });
      const rows = await dailyRows(org.id);
      expect(rows.map((r) => [r.model, r.inputTokens, r.outputTokens])).toEqual([
        ['even', 6, 30],
        ['odd', 6, 36],
      ]);
    });

    it('rejects negative, fractional or non-numeric counts and a missing model with 400, counting nothing', async () => {
      const { org, owner, sessionId, turnId } = await api.runningSession();
      for (const [body, field] of [
        [{ model: 'm', inputTokens: -1 }, 'inputTokens'],
        [{ model: 'm', outputTokens: 1.5 }, 'outputTokens'],
        [{ model: 'm', cacheCreationTokens: '5' }, 'cacheCreationTokens'],
        [{ model: 'm', cacheReadTokens: null }, 'cacheReadTokens'],
        [{ model: 'm', thinkingTokens: -0.5 }, 'thinkingTokens'],
        [{ model: 'm', inputTokens: 1_000_000_000_001 }, 'inputTokens'],
        [{ inputTokens: 1 }, 'model'],
        [{ model: '' }, 'model'],
        [{ model: 'm', tokens: 1 }, 'tokens'],
      ] as Array<[object, string]>) {
        expectInvalid(await api.usage(owner, sessionId, { turnId, ...body }), field);
      }
      expect((await api.getSession(owner, sessionId)).sessionSettings?.tokenUsage).toBeUndefined();
      expect(await dailyRows(org.id)).toEqual([]);
    });
  });
});
