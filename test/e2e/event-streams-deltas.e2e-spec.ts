import Ajv2020 from 'ajv/dist/2020';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { sleep } from '../utils/polling';
import { payloads, SseStream } from '../utils/sse';
import { startTestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { eventStreamsFixture, Json } from '../utils/fixtures/event-streams';

/**
 * `message.delta`: the text a model is writing, from its agent to the session's open streams, live only. On
 * PostgreSQL the agent's deltas go to one instance and the streams are open on another (NOTIFY in between).
 */
describe('Message deltas on event streams', () => {
  const fixture = eventStreamsFixture();
  const { stream, post, session } = fixture;

  /** A session of `owner` with a user message, and the turn an agent (the owner's key) took. */
  async function running(owner: TestUser): Promise<{ sessionId: string; turnId: string }> {
    const sessionId = await session(owner);
    await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'Write a poem.' }).expect(200);
    const claim = await post(owner, '/api/v0/agent/claims', {}).expect(200);
    expect(claim.body.work).toMatchObject({ sessionId });
    return { sessionId, turnId: claim.body.work.turnId as string };
  }

  const delta = (user: TestUser, sessionId: string, body: object) => post(user, `/api/v0/agent/sessions/${sessionId}/deltas`, body);
  const deltasOf = (s: SseStream) => s.events.filter((e) => e.event === 'message.delta');

  it('sends each delta to the streams open now, without an id, and stores nothing of it', async () => {
    const owner = await createUser(fixture.writer, Role.Owner, await createOrganization(fixture.writer, { messageHistory: true }));
    const { sessionId, turnId } = await running(owner);
    const sessionStream = await stream(owner, `/api/v0/sessions/${sessionId}/events`);
    const orgStream = await stream(owner, '/api/v0/events');
    // More than one NOTIFY holds (quotes and newlines double as JSON, non-Latin letters take 2 or 3 bytes), to arrive whole and in order.
    const long = 'Ünïcødé "quoted" \\ line\n'.repeat(600).slice(0, 16_384);
    const pieces = ['Roses ', 'are red', long];
    for (const text of pieces) expect((await delta(owner, sessionId, { turnId, step: 0, text })).status).toBe(202);
    await delta(owner, sessionId, { turnId, step: 1, text: 'Done.' }).expect(202);
    // The last one says all came: they arrive in order.
    for (const s of [sessionStream, orgStream]) await s.until((x) => deltasOf(x).some((e) => JSON.parse(e.data).data.step === 1), 'the deltas');

    const doc = (await fixture.writer.http().get('/docs-json').expect(200)).body as Json;
    const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const validate = ajv.compile({ $ref: 'openapi#/components/schemas/MessageDeltaEvent' });
    for (const s of [sessionStream, orgStream]) {
      const wire = deltasOf(s);
      expect(wire.every((e) => e.id === undefined)).toBe(true);
      const events = wire.map((e) => JSON.parse(e.data) as Json);
      for (const event of events) expect([validate(event), ajv.errorsText(validate.errors)]).toEqual([true, 'No errors']);
      // Another instance may get a long one in several pieces (NOTIFY payloads are bounded): together they are the text, in order.
      const text = (step: number) => events.flatMap((e) => (e.data.step === step ? [e.data.text as string] : [])).join('');
      expect([text(0), text(1)]).toEqual([`Roses are red${long}`, 'Done.']);
      expect(events.map((e) => e.data.step)).toEqual([...events.slice(0, -1).map(() => 0), 1]);
      expect(events[0]).toMatchObject({ type: 'message.delta', organizationId: owner.organizationId, sessionId, data: { sessionId, turnId } });
    }

    // The stored message is what counts; the numbered events go on as if the deltas were never sent.
    await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'assistant', content: [{ type: 'text', text: `Roses are red${long}` }] }],
    }).expect(200);
    await sessionStream.until((x) => x.events.some((e) => e.event === 'message.added' && JSON.parse(e.data).data.role === 'assistant'), 'the answer');
    const numbered = sessionStream.events.filter((e) => e.event !== 'message.delta');
    expect(numbered.every((e) => e.id !== undefined)).toBe(true);
    const logged = await fixture.writer.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 1000, sessionId });
    expect(logged.map((e) => e.type)).not.toContain('message.delta');
    const listed = await fixture.reader.http().get(`/api/v0/sessions/${sessionId}/events?types=message.delta`).set(owner.auth).expect(200);
    expect(listed.body.events).toEqual([]);
    // Resuming from the last id replays no delta.
    const resumed = await stream(owner, `/api/v0/sessions/${sessionId}/events?after=0`);
    await resumed.until((x) => x.events.some((e) => e.event === 'message.added' && JSON.parse(e.data).data.role === 'assistant'), 'the replay');
    expect(deltasOf(resumed)).toEqual([]);
    for (const s of [sessionStream, orgStream, resumed]) s.close();
  });

  it('carries what each delta is (kind), with the tool call of the tool kinds, as the document describes it', async () => {
    const owner = await createUser(fixture.writer, Role.Owner, await createOrganization(fixture.writer, { messageHistory: true }));
    const { sessionId, turnId } = await running(owner);
    const s = await stream(owner, `/api/v0/sessions/${sessionId}/events?types=message.delta`);
    // A call id as long as allowed, of 3-byte characters, and output as long as allowed: on PostgreSQL the NOTIFY notes make room for the id.
    const toolUseId = `toolu_${'€'.repeat(250)}`;
    const output = 'Ünïcødé "out" \\ line\n'.repeat(800).slice(0, 16_384);
    const sent = [
      { step: 0, kind: 'thinking', text: 'The user wants ' },
      { step: 0, kind: 'thinking', text: 'a listing.' },
      { step: 0, kind: 'tool_input', toolUseId, toolName: 'Execute', text: '{"command": ' },
      { step: 0, kind: 'tool_input', toolUseId, toolName: 'Execute', text: '"ls"}' },
      { step: 0, kind: 'tool_output', toolUseId, toolName: 'Execute', text: output },
      // Without a kind: text, as agents from before kinds send it.
      { step: 1, text: 'Done.' },
    ];
    for (const body of sent) await delta(owner, sessionId, { turnId, ...body }).expect(202);
    await s.until((x) => deltasOf(x).some((e) => JSON.parse(e.data).data.step === 1), 'the deltas');

    const doc = (await fixture.writer.http().get('/docs-json').expect(200)).body as Json;
    const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const validate = ajv.compile({ $ref: 'openapi#/components/schemas/MessageDeltaEvent' });
    const events = deltasOf(s).map((e) => JSON.parse(e.data) as Json);
    for (const event of events) expect([validate(event), ajv.errorsText(validate.errors)]).toEqual([true, 'No errors']);
    // Several pieces on another instance may carry one delta (NOTIFY payloads are bounded): by kind, in order, they are what was sent.
    const of = (kind: string) => events.filter((e) => e.data.kind === kind).map((e) => e.data as Json);
    const joined = (kind: string) =>
      of(kind)
        .map((data) => data.text as string)
        .join('');
    expect([joined('thinking'), joined('tool_input'), joined('tool_output'), joined('text')]).toEqual([
      'The user wants a listing.',
      '{"command": "ls"}',
      output,
      'Done.',
    ]);
    expect(events.map((e) => e.data.kind)).toEqual([...new Set(events.map((e) => e.data.kind))].flatMap((kind) => of(kind).map(() => kind)));
    for (const data of [...of('tool_input'), ...of('tool_output')]) expect(data).toMatchObject({ toolUseId, toolName: 'Execute', step: 0 });
    for (const data of [...of('thinking'), ...of('text')]) expect(Object.keys(data).sort()).toEqual(['kind', 'sessionId', 'step', 'text', 'turnId']);
    s.close();
  });

  it('sends thinking and tool output, as text, only to callers who may read the session: a member kept to their own sessions gets none', async () => {
    const org = await createOrganization(fixture.writer, { messageHistory: true });
    const owner = await createUser(fixture.writer, Role.Owner, org);
    const member = await createUser(fixture.writer, Role.Member, org);
    await fixture.writer
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { restrictMemberVisibility: true } })
      .expect(200);
    const { sessionId, turnId } = await running(owner);
    const memberSession = await running(member);
    const ownerStream = await stream(owner, '/api/v0/events?types=message.delta');
    const memberStream = await stream(member, '/api/v0/events?types=message.delta');
    const call = { toolUseId: 'toolu_01', toolName: 'Execute' };
    for (const body of [
      { kind: 'thinking', text: 'private reasoning' },
      { kind: 'tool_input', ...call, text: '{"command":"cat .env"}' },
      { kind: 'tool_output', ...call, text: 'SECRET=1\n' },
      { text: 'private answer' },
    ])
      await delta(owner, sessionId, { turnId, step: 0, ...body }).expect(202);
    // Then one of the member's own session: each stream takes deltas in the order they came, so once the member has
    // this one, every delta before it was weighed and kept from them.
    await delta(member, memberSession.sessionId, { turnId: memberSession.turnId, step: 0, text: 'mine' }).expect(202);
    await memberStream.until((x) => deltasOf(x).length > 0, "the member's own delta");
    await ownerStream.until((x) => deltasOf(x).length === 5, 'every delta');
    expect(deltasOf(memberStream).map((e) => JSON.parse(e.data).data)).toEqual([
      { sessionId: memberSession.sessionId, turnId: memberSession.turnId, step: 0, kind: 'text', text: 'mine' },
    ]);
    expect(deltasOf(ownerStream).map((e) => JSON.parse(e.data).data.kind)).toEqual(['thinking', 'tool_input', 'tool_output', 'text', 'text']);
    for (const s of [ownerStream, memberStream]) s.close();
  });

  it("follows the stream's filters and who may read the session's messages", async () => {
    const org = await createOrganization(fixture.writer, { messageHistory: true });
    const owner = await createUser(fixture.writer, Role.Owner, org);
    const guest = await createUser(fixture.writer, Role.Guest, org);
    const { sessionId, turnId } = await running(owner);
    const other = await session(owner, 'another');
    const onlyDeltas = await stream(owner, '/api/v0/events?types=message.delta');
    const noDeltas = await stream(owner, `/api/v0/sessions/${sessionId}/events?types=message.added`);
    const otherSession = await stream(owner, `/api/v0/sessions/${other}/events`);
    const guestStream = await stream(guest, '/api/v0/events');
    await delta(owner, sessionId, { turnId, step: 0, text: 'hello' }).expect(202);
    await onlyDeltas.until((x) => deltasOf(x).length === 1, 'the delta');
    await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'assistant', content: [{ type: 'text', text: 'hello' }] }],
    });
    await noDeltas.until((x) => x.events.some((e) => e.event === 'message.added' && JSON.parse(e.data).data.role === 'assistant'), 'the answer');
    await sleep(300);
    expect(payloads(onlyDeltas).map((e) => e.type)).toEqual(['message.delta']);
    expect(deltasOf(noDeltas)).toEqual([]);
    expect(deltasOf(otherSession)).toEqual([]);
    // A guest may not read the owner's session.
    expect(deltasOf(guestStream)).toEqual([]);
    for (const s of [onlyDeltas, noDeltas, otherSession, guestStream]) s.close();
  });

  it('sends none where the organization keeps no message history (message.added carries no message there either)', async () => {
    const owner = await createUser(fixture.writer, Role.Owner, await createOrganization(fixture.writer, { messageHistory: false }));
    const { sessionId, turnId } = await running(owner);
    const s = await stream(owner, `/api/v0/sessions/${sessionId}/events`);
    await delta(owner, sessionId, { turnId, step: 0, text: 'secret' }).expect(202);
    await delta(owner, sessionId, { turnId, step: 0, kind: 'thinking', text: 'secret thoughts' }).expect(202);
    await delta(owner, sessionId, { turnId, step: 0, kind: 'tool_output', toolUseId: 'toolu_1', toolName: 'Execute', text: 'secret output' }).expect(202);
    await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'assistant', content: [{ type: 'text', text: 'secret' }] }],
    });
    await s.until((x) => x.events.some((e) => e.event === 'message.added'), 'the answer');
    await sleep(300);
    expect(deltasOf(s)).toEqual([]);
    s.close();
  });

  it('has a limit of its own, 50 a second per credential (429 too_many_deltas), and spends none of the shared budgets', async () => {
    // Six requests a minute for the credential: the session, its message, the claim, and the append after the deltas.
    const app = await startTestApp({ RATE_LIMIT_CREDENTIAL_PER_MINUTE: '6' });
    try {
      const owner = await createUser(app, Role.Owner, await createOrganization(app, { messageHistory: true }));
      const call = (path: string, body: object) => app.http().post(path).set(owner.auth).send(body);
      const sessionId = (await call('/api/v0/sessions', {}).expect(201)).body.sessionId as string;
      await call(`/api/v0/sessions/${sessionId}/messages`, { text: 'Go.' }).expect(200);
      const { turnId } = (await call('/api/v0/agent/claims', {}).expect(200)).body.work as { turnId: string };
      const burst = await Promise.all(Array.from({ length: 120 }, () => call(`/api/v0/agent/sessions/${sessionId}/deltas`, { turnId, step: 0, text: 'x' })));
      const refused = burst.filter((res) => res.status === 429);
      // 50 a window: a burst slow enough to reach into a second window gets at most 100 through.
      const accepted = burst.filter((res) => res.status === 202).length;
      expect([accepted >= 50 && accepted <= 100, accepted + refused.length]).toEqual([true, 120]);
      expectV0Error(refused[0], 429, 'too_many_deltas');
      expect(refused[0].headers['retry-after']).toBe('1');
      // The shared budget is untouched by them: the turn's append still goes through.
      await call(`/api/v0/agent/sessions/${sessionId}/messages`, { turnId, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'x' }] }] }).expect(
        200,
      );
      await sleep(1_100);
      await call(`/api/v0/agent/sessions/${sessionId}/deltas`, { turnId, step: 0, text: 'again' }).expect(202);
    } finally {
      await app.close();
    }
  });

  it('refuses a delta of a turn that is not running (409), bad input (400) and an unknown session (404)', async () => {
    const owner = await createUser(fixture.writer, Role.Owner, await createOrganization(fixture.writer, { messageHistory: true }));
    const { sessionId, turnId } = await running(owner);
    for (const [body, field] of [
      [{ turnId, step: -1, text: 'x' }, 'step'],
      [{ turnId, step: 1.5, text: 'x' }, 'step'],
      [{ turnId, step: 0, text: '' }, 'text'],
      [{ turnId, step: 0, text: 'x'.repeat(16_385) }, 'text'],
      [{ turnId, step: 0 }, 'text'],
      [{ turnId, step: 0, text: 'x', extra: 1 }, 'extra'],
    ] as const) {
      const res = await delta(owner, sessionId, body);
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.detail).toContain(field);
    }
    // `kind`: one of four; the tool kinds name their call, the others none.
    const call = { toolUseId: 'toolu_1', toolName: 'Execute' };
    for (const [body, errors] of [
      [{ kind: 'poem' }, [{ field: 'kind', message: 'must be one of: text, thinking, tool_input, tool_output' }]],
      [
        { kind: 'tool_output' },
        [
          { field: 'toolUseId', message: "is required: the tool call's id, with kind tool_input and tool_output" },
          { field: 'toolName', message: "is required: the tool's name, with kind tool_input and tool_output" },
        ],
      ],
      [{ kind: 'tool_input', toolUseId: 'toolu_1' }, [{ field: 'toolName', message: "is required: the tool's name, with kind tool_input and tool_output" }]],
      [{ kind: 'thinking', ...call }, ['toolUseId', 'toolName'].map((field) => ({ field, message: 'is accepted only with kind tool_input or tool_output' }))],
      [{ toolUseId: 'toolu_1' }, [{ field: 'toolUseId', message: 'is accepted only with kind tool_input or tool_output' }]],
      [{ kind: 'tool_output', ...call, toolUseId: '' }, [{ field: 'toolUseId', message: 'must be longer than or equal to 1 characters' }]],
    ] as const) {
      const res = await delta(owner, sessionId, { turnId, step: 0, text: 'x', ...body });
      expectV0Error(res, 400, 'validation_failed');
      expect([res.body.detail, res.body.metadata.errors]).toEqual([
        `${errors[0].field}: ${errors[0].message}${errors.length > 1 ? ' (and 1 more problem)' : ''}`,
        errors,
      ]);
    }
    await delta(owner, sessionId, { turnId, step: 0, kind: 'tool_output', ...call, text: 'x'.repeat(16_385) }).expect(400);
    await delta(owner, sessionId, { turnId, step: 0, kind: 'tool_output', ...call, text: 'x' }).expect(202);
    expectV0Error(await delta(owner, sessionId, { turnId: '00000000-0000-4000-8000-000000000000', step: 0, text: 'x' }), 409, 'turn_not_active');
    expectV0Error(await delta(owner, sessionId, { turnId: 'not-a-uuid', step: 0, text: 'x' }), 409, 'turn_not_active');
    expectV0Error(await delta(owner, '00000000-0000-4000-8000-000000000000', { turnId, step: 0, text: 'x' }), 404, 'session_not_found');
    await post(owner, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId }).expect(200);
    expectV0Error(await delta(owner, sessionId, { turnId, step: 0, text: 'late' }), 409, 'turn_not_active');
  });
});
