import { ACTIVITY_FACTS_LISTENER } from '../../src/modules/analytics/activity-facts.listener';
import { DurableListeners } from '../../src/platform/events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { createOrganization } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { agentProcessFixture, call, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';

/**
 * The reference agent as a real process, against the real server and a scripted model on loopback: a turn from the
 * user's message to the answer, with the tools, a subagent, compaction, and the hooks that run on the way.
 */
describe('The agent process', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, say, untilIdle, messages } = fixture;
  let t: TestApp;
  beforeAll(() => (t = fixture.t));

  it('without a model, ends the turn with a message that says how to configure one', async () => {
    const { computerId, output } = await computerWithAgent({});
    const sessionId = await say(computerId, 'Add a README');
    await untilIdle(sessionId, output);
    const all = await messages(sessionId);
    expect(all.map((m) => m.role)).toEqual(['user', 'system']);
    expect(all[1].content[0].text).toMatch(/No model is configured.*AGENT_MODEL_BASE_URL/s);
  });

  it('runs the model with the tools: creates a file, refuses a denied command, answers, and reports usage', async () => {
    await createOrganization(t); // keep ids apart
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user') {
        return completion({
          reasoning_content: 'Create the file, then clean up.',
          tool_calls: [
            call('call_1', 'Create', { file_path: 'notes/hello.txt', content: 'hello from the agent\n' }),
            call('call_2', 'Execute', { command: 'rm -rf notes' }),
          ],
        });
      }
      return completion({ content: 'Created notes/hello.txt; the cleanup command was refused.' }, { prompt_tokens: 200, completion_tokens: 12 });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, workspace, output } = await computerWithAgent({
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
        AGENT_MODEL_API_KEY: 'sk-test',
      });
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { commandDenylist: ['rm'] } })
        .expect(200);
      const sessionId = await say(computerId, 'Write a note, then remove the notes folder.');
      const session = await untilIdle(sessionId, output);

      expect(readFileSync(join(workspace, 'notes/hello.txt'), 'utf8')).toBe('hello from the agent\n');
      expect(existsSync(join(workspace, 'notes'))).toBe(true);
      const all = await messages(sessionId);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      const [, first, results, last] = all;
      expect(first).toMatchObject({
        modelId: 'scripted-1',
        chatCompletionReasoningField: 'reasoning_content',
        chatCompletionReasoningContent: 'Create the file, then clean up.',
      });
      expect(first.content[0]).toMatchObject({
        type: 'thinking',
        thinking: 'Create the file, then clean up.',
        signatureProvider: 'generic-chat-completion-api',
      });
      expect(first.content.slice(1)).toEqual([
        { type: 'tool_use', id: 'call_1', name: 'Create', input: { file_path: 'notes/hello.txt', content: 'hello from the agent\n' } },
        { type: 'tool_use', id: 'call_2', name: 'Execute', input: { command: 'rm -rf notes' } },
      ]);
      expect(results.content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'call_1', isError: false });
      expect(results.content[1]).toMatchObject({ type: 'tool_result', toolUseId: 'call_2', isError: true });
      expect(results.content[1].content).toMatch(/commandDenylist/);
      expect(last.content).toEqual([{ type: 'text', text: 'Created notes/hello.txt; the cleanup command was refused.' }]);
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 320, outputTokens: 42 });

      // The model got the tools, the key, and the tool results of its calls.
      expect(model.requests[0].tools.map((tool: Json) => tool.function.name)).toEqual([
        'Read',
        'LS',
        'Glob',
        'Grep',
        'Create',
        'Edit',
        'ApplyPatch',
        'Execute',
        'WebFetch',
        'TodoWrite',
        'Task',
      ]);
      expect(model.requests[0].model).toBe('scripted-1');
      const toolMessages = (model.requests[1].messages as Json[]).filter((m) => m.role === 'tool');
      expect(toolMessages.map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2']);
    } finally {
      await model.stop();
    }
  });

  it('runs a subagent for the Task tool: its work is recorded hidden, its report is the result, and SubagentStop fires', async () => {
    const model = new ScriptedModel((request) => {
      const messages = request.messages as Json[];
      const last = messages[messages.length - 1];
      const subagent = String(messages[0].content).startsWith('You are a subagent');
      if (subagent) {
        if (last.role === 'user') return completion({ tool_calls: [call('sub_1', 'Create', { file_path: 'sub.txt', content: 'from the subagent\n' })] });
        return completion({ content: 'Created sub.txt.' });
      }
      if (last.role === 'user')
        return completion({ tool_calls: [call('task_1', 'Task', { description: 'Write sub.txt', prompt: 'Create sub.txt saying hello.' })] });
      return completion({ content: `The subagent says: ${String(last.content)}` });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const seen = join(home, 'subagent-stop.json');
      writeFileSync(join(home, 'hooks.json'), JSON.stringify({ hooks: { SubagentStop: [{ hooks: [{ type: 'command', command: `cat > ${seen}` }] }] } }));
      const sessionId = await say(computerId, 'Delegate writing sub.txt.');
      await untilIdle(sessionId, output);

      expect(readFileSync(join(workspace, 'sub.txt'), 'utf8')).toBe('from the subagent\n');
      // The subagent started from the prompt alone, with the workspace tools but no Task of its own.
      const first = model.requests.find((r) => String(r.messages[0].content).startsWith('You are a subagent'))!;
      expect(first.messages.slice(1)).toEqual([{ role: 'user', content: 'Create sub.txt saying hello.' }]);
      expect(first.tools.map((tool: Json) => tool.function.name)).not.toContain('Task');

      const all = (await messages(sessionId)).filter((m) => !m.hookEventName);
      expect(all.map((m) => [m.role, m.hiddenFromUserViews === true])).toEqual([
        ['user', false],
        ['assistant', false], // Task
        ['assistant', true], // the subagent's Create
        ['tool', true],
        ['assistant', true], // its report
        ['tool', false], // the Task result
        ['assistant', false],
      ]);
      expect(all[5].content[0]).toMatchObject({ type: 'tool_result', toolUseId: 'task_1', isError: false, content: 'Created sub.txt.' });
      expect(all[6].content).toEqual([{ type: 'text', text: 'The subagent says: Created sub.txt.' }]);
      expect(JSON.parse(readFileSync(seen, 'utf8'))).toMatchObject({ hook_event_name: 'SubagentStop', session_id: sessionId, stop_hook_active: false });
    } finally {
      await model.stop();
    }
  });

  it("compacts a conversation grown past AGENT_CONTEXT_CHARS into the model's summary, after PreCompact", async () => {
    const big = 'x'.repeat(3_000);
    const model = new ScriptedModel((request) => {
      const messages = request.messages as Json[];
      const last = messages[messages.length - 1];
      if (String(last.content).startsWith('Summarise the conversation so far')) {
        expect(request.tools).toBeUndefined();
        return completion({ content: 'SUMMARY: the user sent a long text; the agent read notes.txt.' });
      }
      if (last.role === 'user' && String(last.content).startsWith('Read'))
        return completion({ tool_calls: [call('call_1', 'Read', { file_path: 'notes.txt' })] });
      return completion({ content: 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, workspace, home, output } = await computerWithAgent({
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
        AGENT_CONTEXT_CHARS: '5000',
      });
      mkdirSync(workspace, { recursive: true });
      writeFileSync(join(workspace, 'notes.txt'), `${big}\n`);
      const seen = join(home, 'pre-compact.json');
      writeFileSync(join(home, 'hooks.json'), JSON.stringify({ PreCompact: [{ hooks: [{ type: 'command', command: `cat > ${seen}` }] }] }));
      const sessionId = await say(computerId, `Read notes.txt. ${big}`);
      await untilIdle(sessionId, output);

      // The file read pushed the conversation past 5,000 characters: the next call was the summary, then the work went on from it.
      const summarising = model.requests.findIndex((r) => String(r.messages[r.messages.length - 1].content).startsWith('Summarise the conversation so far'));
      expect(summarising).toBe(1);
      expect(model.requests[2].messages.slice(1)).toEqual([
        { role: 'user', content: expect.stringMatching(/^The conversation so far was compacted.*\n\nSUMMARY: the user sent a long text/s) },
      ]);
      const all = await messages(sessionId);
      expect(all.find((m) => m.role === 'system' && !m.hookEventName)?.content[0].text).toMatch(/grown past 5000 characters, so it was compacted/);
      expect(all.filter((m) => m.hookEventName === 'PreCompact').map((m) => m.hookStatus)).toEqual(['executing', 'completed']);
      expect(JSON.parse(readFileSync(seen, 'utf8'))).toMatchObject({
        hook_event_name: 'PreCompact',
        trigger: 'auto',
        custom_instructions: null,
        session_id: sessionId,
      });
      // The summary call counts in the session's usage too: three model calls.
      const session = (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 360, outputTokens: 90 });
    } finally {
      await model.stop();
    }
  });

  describe('hooks', () => {
    it('runs the configured commands on their events with the documented input, records them, and blocks only on exit 2', async () => {
      const model = new ScriptedModel((request) => {
        const last = request.messages[request.messages.length - 1] as Json;
        if (last.role === 'user')
          return completion({
            tool_calls: [call('call_1', 'Create', { file_path: 'a.txt', content: 'a' }), call('call_2', 'Execute', { command: 'echo ran > ran.txt' })],
          });
        return completion({ content: 'Done.' });
      });
      const modelUrl = await model.start();
      try {
        const { owner, computerId, workspace, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        const out = join(home, 'out');
        writeFileSync(
          join(home, 'hooks.json'),
          JSON.stringify({
            hooks: {
              UserPromptSubmit: [
                { hooks: [{ type: 'command', command: `mkdir -p ${out}; if grep -q forbidden; then echo 'no forbidden words' >&2; exit 2; fi` }] },
              ],
              PreToolUse: [{ matcher: 'Execute', hooks: [{ type: 'command', command: `cat > ${out}/pre.json; echo 'no shell today' >&2; exit 2` }] }],
              PostToolUse: [
                {
                  matcher: 'Create|Edit',
                  hooks: [
                    { type: 'command', command: `cat > ${out}/post.json; echo "$AGENT_PROJECT_DIR" > ${out}/project-dir.txt` },
                    { type: 'command', command: 'sleep 5', timeout: 1 },
                    { type: 'command', command: 'exit 3' },
                  ],
                },
                // The same command again, and an entry whose matcher selects no tool here: neither runs twice or at all.
                { matcher: 'Create', hooks: [{ type: 'command', command: 'exit 3' }] },
                { matcher: 'create', hooks: [{ type: 'command', command: `touch ${out}/case-insensitive` }] },
              ],
              Stop: [{ hooks: [{ type: 'command', command: `cat > ${out}/stop.json` }] }],
            },
          }),
        );
        const sessionId = await say(computerId, 'Create a.txt, then run a command.');
        await untilIdle(sessionId, output);

        expect(readFileSync(join(workspace, 'a.txt'), 'utf8')).toBe('a');
        expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
        const all = await messages(sessionId);
        const results = all.find((m) => m.role === 'tool')!;
        expect(results.content[1]).toMatchObject({ toolUseId: 'call_2', isError: true, content: expect.stringContaining('no shell today') });
        expect(all.filter((m) => m.role === 'assistant').pop()!.content).toEqual([{ type: 'text', text: 'Done.' }]);

        const pre = JSON.parse(readFileSync(join(out, 'pre.json'), 'utf8')) as Json;
        expect(pre).toMatchObject({
          hook_event_name: 'PreToolUse',
          session_id: sessionId,
          cwd: workspace,
          tool_name: 'Execute',
          tool_input: { command: 'echo ran > ran.txt' },
          tool_use_id: 'call_2',
          permission_mode: 'default',
        });
        expect(existsSync(pre.transcript_path as string)).toBe(true);
        const post = JSON.parse(readFileSync(join(out, 'post.json'), 'utf8')) as Json;
        expect(post).toMatchObject({
          hook_event_name: 'PostToolUse',
          tool_name: 'Create',
          tool_input: { file_path: 'a.txt' },
          tool_response: { isError: false },
        });
        expect(readFileSync(join(out, 'project-dir.txt'), 'utf8').trim()).toBe(workspace);
        expect(existsSync(join(out, 'case-insensitive'))).toBe(false);
        expect(JSON.parse(readFileSync(join(out, 'stop.json'), 'utf8'))).toMatchObject({ hook_event_name: 'Stop', session_id: sessionId });

        const hookMessages = all.filter((m) => m.hookEventName);
        expect(hookMessages.map((m) => [m.hookEventName, m.hookStatus])).toEqual([
          ['UserPromptSubmit', 'executing'],
          ['UserPromptSubmit', 'completed'],
          // Create: no PreToolUse hook matches it; its PostToolUse hooks run. Execute: blocked before it runs.
          ['PostToolUse', 'executing'],
          ['PostToolUse', 'error'],
          ['PreToolUse', 'executing'],
          ['PreToolUse', 'error'],
          ['Stop', 'executing'],
          ['Stop', 'completed'],
        ]);
        const postRun = hookMessages[3];
        expect(postRun).toMatchObject({
          hookMatcher: 'Create|Edit|Create',
          hookToolCallId: 'call_1',
          isParallelExecution: true,
          parallelGroupId: expect.any(String),
        });
        expect(postRun.hookCommands.map((c: Json) => c.command)).toHaveLength(3);
        expect(postRun.hookResults.map((r: Json) => r.exitCode)).toEqual([0, -1, 3]);
        expect(postRun.hookResults[1].stderr).toMatch(/killed after 1 s/);
        expect(postRun.hookEndTime - postRun.hookStartTime).toBeLessThan(4_000);

        // Exit 2 on UserPromptSubmit keeps the message from the model; the turn says so.
        const requestsBefore = model.requests.length;
        await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'say something forbidden' }).expect(200);
        await untilIdle(sessionId, output);
        expect(model.requests.length).toBe(requestsBefore);
        const after = await messages(sessionId);
        expect(after.filter((m) => m.role === 'system' && !m.hookEventName).map((m) => m.content[0].text)).toEqual([
          expect.stringMatching(/UserPromptSubmit hook blocked this message: no forbidden words/),
        ]);

        // Analytics count each run once, when it has ended: 2 + 1 + 3 + 1 commands.
        await t.app.get(DurableListeners).catchUp(ACTIVITY_FACTS_LISTENER, owner.organizationId);
        const hooks = (await t.app
          .get(DataSource)
          .query(`SELECT count(*)::int AS n FROM analytics_facts WHERE organization_id = $1 AND kind = 'hook'`, [owner.organizationId])) as Json[];
        expect(hooks[0].n).toBe(7);
      } finally {
        await model.stop();
      }
    });

    it('goes on without hooks, and says why, when the hooks file is invalid', async () => {
      const model = new ScriptedModel(() => completion({ content: 'Fine.' }));
      const modelUrl = await model.start();
      try {
        const { computerId, home, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        writeFileSync(join(home, 'hooks.json'), JSON.stringify({ Stop: [{ matcher: 1, hooks: [{ type: 'shell', command: 'true' }] }] }));
        const sessionId = await say(computerId, 'Hello');
        await untilIdle(sessionId, output);
        const all = await messages(sessionId);
        expect(all.map((m) => m.role)).toEqual(['user', 'system', 'assistant']);
        expect(all[1].content[0].text).toMatch(/Hooks are off for this turn: the hooks file is invalid\. .*hooks\.json: .*\/Stop\/0\/matcher must be string/);
      } finally {
        await model.stop();
      }
    });
  });
});
