// Sessions and their messages: BENCH_SESSIONS sessions (90% in the bench org), BENCH_MESSAGES_PER_SESSION each.
import { bulkLoad, seconds, uuidv7 } from '../lib/bulk.mjs';

export const name = 'sessions';

export function params(env) {
  return {
    sessions: Number(env.BENCH_SESSIONS ?? 1_000_000),
    messagesPerSession: Number(env.BENCH_MESSAGES_PER_SESSION ?? 10),
  };
}

export async function load({ db, params: { sessions, messagesPerSession: m }, fixtures, log }) {
  if (!(Number.isInteger(sessions) && sessions >= 1)) throw new Error('BENCH_SESSIONS: a whole number, at least 1');
  if (!(Number.isInteger(m) && m >= 0 && m <= 65_535)) throw new Error('BENCH_MESSAGES_PER_SESSION: 0 to 65,535 (a message id keeps its seq in 16 bits)');
  const { benchOrg, otherOrgs } = fixtures;
  // Conversations repeat turns of: user, assistant (with a tool call), tool result, assistant.
  const lastUserSeq = m === 0 ? 0 : 4 * Math.floor((m - 1) / 4) + 1;
  // Sessions span a year whatever the scale; the 0-999 ms jitter keeps creation times distinct and millisecond-precise.
  const stepMs = Math.max(1000, Math.floor((365 * 24 * 3600 * 1000) / Math.max(sessions, 1)));
  const batch = Math.min(50_000, Math.max(1_000, Math.ceil(sessions / 20)));
  const contents = contentVariants();

  await bulkLoad(
    db,
    ['sessions', 'messages'],
    async () => {
      const started = Date.now();
      for (let from = 1; from <= sessions; from += batch) {
        const to = Math.min(sessions, from + batch - 1);
        await db.query(insertBatch, [
          from,
          to,
          benchOrg.id,
          benchOrg.userIds,
          otherOrgs.map((o) => o.id),
          otherOrgs.map((o) => o.ownerId),
          Date.UTC(2025, 0, 1),
          stepMs,
          m,
          lastUserSeq,
          Math.max(0, lastUserSeq - 4),
          ...contents,
        ]);
        log(`sessions ${to.toLocaleString('en')} / ${sessions.toLocaleString('en')}, messages ${(to * m).toLocaleString('en')} (${seconds(started)} s)`);
      }
    },
    log,
  );
  const { rows } = await db.query('SELECT count(*)::int AS n FROM sessions WHERE organization_id = $1', [benchOrg.id]);
  return { sessions, messages: sessions * m, benchOrgSessions: rows[0].n };
}

const VARIANTS = 64;
const PROSE =
  'The failing test reads the configuration before the module is initialised, so the retry loop never sees the ' +
  'new value. Moving the read into the constructor and passing the value down keeps the order explicit. I also ' +
  'checked the other callers: two of them cache the client, which is fine because they only read it once per ' +
  'request. The migration adds an index on the organization and creation time, which the list query needs for ' +
  'keyset pagination; without it the planner sorts the whole table. Could you look at the pull request and tell ' +
  'me whether the error handling in the worker matches what we discussed? Please also run the linter on the ' +
  'package and fix whatever it reports, then summarise the changes in the description. ';

/**
 * Message contents by place in a turn, VARIANTS of each with texts of 200-450 characters. Picking from these is
 * ~20x cheaper than building JSON per row in SQL, which would dominate the load time.
 */
function contentVariants() {
  const text = (k, place) => {
    const start = (k * 11 + place * 101) % 700;
    return PROSE.repeat(2).slice(start, start + 200 + ((k * 53 + place * 17) % 250));
  };
  const variants = (place, build) => Array.from({ length: VARIANTS }, (_, k) => JSON.stringify(build(k, text(k, place))));
  const toolId = (k) => `toolu_bench${String(k).padStart(4, '0')}`;
  return [
    variants(0, (k, t) => [{ type: 'text', text: t }]),
    variants(1, (k, t) => [
      { type: 'text', text: t },
      { type: 'tool_use', id: toolId(k), name: 'read_file', input: { path: `src/module_${k}/index.ts` } },
    ]),
    variants(2, (k, t) => [{ type: 'tool_result', toolUseId: toolId(k), content: t }]),
    variants(3, (k, t) => [{ type: 'text', text: t }]),
  ];
}

// Ms from the session's creation to message `k` (from 1): messages follow each other ~20 s apart.
const offsetMs = (k) => `((GREATEST(${k}, 1) - 1) * 20011 + (${k}) * 7)`;
// Message `seq` of a session: the session id with seq in its last 16 bits, so a message's parent, and the
// session's last message, are known without looking them up (and cost no random numbers).
const messageId = (sessionId, seq) => `encode(substring(uuid_send(${sessionId}) from 1 for 14) || substring(int4send(${seq}) from 3), 'hex')::uuid`;

// $1..$2 session numbers, $3 bench org, $4 its users, $5/$6 other orgs and their owners, $7 epoch ms of the first
// session, $8 ms between sessions, $9 messages per session, $10 last user seq, $11 the one before, $12-$15 contents.
const insertBatch = `
WITH s AS (
  INSERT INTO sessions (id, organization_id, owner_id, title, status, message_count, last_message_id,
                        last_user_seq, claimed_seq, turn_base_seq, settings, created_at, updated_at)
  SELECT t.id,
         CASE WHEN a.other THEN ($5::uuid[])[a.k] ELSE $3::uuid END,
         CASE WHEN a.other THEN ($6::uuid[])[a.k] ELSE ($4::uuid[])[1 + i % cardinality($4::uuid[])] END,
         CASE WHEN i % 17 <> 0 THEN (ARRAY['Fix the flaky test in', 'Add pagination to', 'Refactor', 'Find the memory leak in', 'Document'])[1 + i % 5] || ' module ' || i % 97 END,
         'idle', $9::int, CASE WHEN $9::int > 0 THEN ${messageId('t.id', '$9::int')} END,
         $10::int, $10::int, $11::int,
         jsonb_build_object('model', (ARRAY['model-a', 'model-b', 'model-c'])[1 + i % 3], 'reasoningEffort', (ARRAY['low', 'medium', 'high'])[1 + i / 3 % 3]),
         timestamptz 'epoch' + t.ms * interval '1 ms',
         timestamptz 'epoch' + (t.ms + ${offsetMs('$9::int')}) * interval '1 ms'
  FROM generate_series($1::int, $2::int) i,
       LATERAL (SELECT i % 10 = 0 AS other, 1 + (i / 10) % cardinality($5::uuid[]) AS k) a,
       -- OFFSET 0 keeps the id computed once per row, though used twice.
       LATERAL (SELECT ms, ${uuidv7('ms')} AS id FROM (SELECT $7::bigint + i::bigint * $8::int + i::bigint * 7919 % 1000 AS ms) x OFFSET 0) t
  RETURNING id, organization_id, owner_id, created_at
)
INSERT INTO messages (organization_id, id, session_id, seq, role, parent_id, author_id, user_message_source, content, created_at, updated_at)
SELECT s.organization_id, ${messageId('s.id', 'seq')}, s.id, seq,
       (ARRAY['user', 'assistant', 'tool', 'assistant'])[1 + c.place],
       CASE WHEN seq > 1 THEN ${messageId('s.id', 'seq - 1')} END,
       CASE WHEN c.place = 0 THEN s.owner_id END,
       CASE WHEN c.place = 0 THEN 'web' END,
       CASE c.place WHEN 0 THEN ($12::jsonb[])[c.v] WHEN 1 THEN ($13::jsonb[])[c.v] WHEN 2 THEN ($14::jsonb[])[c.v] ELSE ($15::jsonb[])[c.v] END,
       s.created_at + ${offsetMs('seq')} * interval '1 ms',
       s.created_at + ${offsetMs('seq')} * interval '1 ms'
FROM s, generate_series(1, $9::int) seq,
     -- The content variant follows the session (a random byte of its id) and the turn, so a tool call and its result match.
     LATERAL (SELECT (seq - 1) % 4 AS place, 1 + (get_byte(uuid_send(s.id), 15) + (seq - 1) / 4 * 5) % ${VARIANTS} AS v) c`;
