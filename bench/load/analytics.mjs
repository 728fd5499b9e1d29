// Analytics facts and token usage for three organizations of their own (see "Analytics" in bench/README.md):
// a large and a small one with the very same active user-days and token usage, so their rollups have the same
// shape and only the number of raw facts differs; and one with a single day of facts, to time its rollup.
import { randomUUID } from 'node:crypto';
import { bulkLoad, seconds } from '../lib/bulk.mjs';

export const name = 'analytics';

/** The organizations' slugs, as the measurements find them. */
export const ORGS = { large: 'analytics-10m', small: 'analytics-100k', day: 'analytics-1day' };

// Facts per active user-day in the one-day organization (how many users its day has follows from it).
const DAY_FACTS_PER_USER = 300;

export function params(env) {
  const whole = (variable, fallback) => {
    const value = Number(env[variable] ?? fallback);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${variable}: expected a whole number, got ${env[variable]}`);
    return value;
  };
  return {
    facts: whole('BENCH_ANALYTICS_FACTS', 10_000_000),
    smallFacts: whole('BENCH_ANALYTICS_SMALL_FACTS', 100_000),
    dayFacts: whole('BENCH_ANALYTICS_DAY_FACTS', 100_000),
    users: whole('BENCH_ANALYTICS_USERS', 5_000),
    days: whole('BENCH_ANALYTICS_DAYS', 300),
    activeUsers: whole('BENCH_ANALYTICS_ACTIVE_USERS', 110),
  };
}

const CLIENTS = ['terminal-ui', 'web', 'non-interactive-cli'];
const DELEGATION = ['auto-high', 'auto-medium', 'auto-low', 'spec', 'manual'];
// The tool calls' autonomy level for each delegation level above (spec mode runs at its autonomy level).
const AUTONOMY = ['auto_high', 'auto_medium', 'auto_low', 'auto_low', 'manual'];
const MODELS = ['claude-sonnet-4-5', 'claude-opus-4-5', 'gpt-5-codex'];

/**
 * What a user-day's facts are made of, beyond its first two (a user message and an assistant message): fact j (from
 * 3) of user-day k of day d is entry (j - 3 + k + d) mod 100. A large user-day (~300 facts) so holds each entry about
 * three times (the weights below); a small one (3 facts) holds one, and a day's 110 users then hold every entry, so
 * both organizations' days name the same tools, servers, skills, commands, hooks and extensions.
 */
function mixEntries() {
  const entries = [];
  const add = (weight, kind, fact = {}) => {
    for (let i = 0; i < weight; i++) entries.push({ kind, name: null, detail: null, command: null, ...fact });
  };
  add(8, 'user_message');
  add(22, 'assistant_message'); // its name is the user's model
  add(2, 'token_report'); // ditto
  add(1, 'session');
  for (const [tool, weight] of [
    ['Read', 5],
    ['Edit', 4],
    ['Bash', 4],
    ['Grep', 3],
    ['Glob', 2],
    ['Write', 2],
    ['MultiEdit', 1],
    ['LS', 1],
    ['TodoWrite', 1],
    ['WebFetch', 1],
    ['WebSearch', 1],
    ['Task', 1],
    ['NotebookEdit', 1],
    ['Skill', 1],
    ['apply_patch', 1],
    ['str_replace_based_edit_tool', 1],
    ['view', 1],
    ['create_file', 1],
    ['run_command', 1],
    ['search', 1],
  ]) {
    add(weight, 'tool_call', { name: tool });
  }
  for (const [server, tool] of [
    ['github', 'create_pull_request'],
    ['linear', 'create_issue'],
    ['slack', 'post_message'],
    ['sentry', 'get_issue'],
    ['notion', 'search'],
    ['jira', 'get_issue'],
    ['figma', 'get_file'],
    ['postgres', 'query'],
  ]) {
    add(1, 'tool_call', { name: `mcp__${server}__${tool}`, detail: server });
  }
  for (const skill of ['pdf', 'xlsx', 'frontend-design']) add(1, 'skill', { name: skill });
  for (const command of ['/review', '/init', '/compact']) add(1, 'slash_command', { name: command });
  for (const [event, matcher, command] of [
    ['PreToolUse', 'Bash', './scripts/check-command.sh'],
    ['PostToolUse', 'Edit', 'npx prettier --write "$FILE"'],
    ['PostToolUse', 'Write', 'npx prettier --write "$FILE"'],
    ['UserPromptSubmit', '', './scripts/check-secrets.sh'],
    ['Stop', '', 'notify-send "agent done"'],
    ['SessionStart', '', 'git fetch --quiet'],
  ]) {
    add(1, 'hook', { name: event, detail: matcher, command });
  }
  for (const [extension, language] of [
    ['ts', 'TypeScript'],
    ['tsx', 'TSX'],
    ['py', 'Python'],
    ['go', 'Go'],
    ['rs', 'Rust'],
    ['md', 'Markdown'],
    ['json', 'JSON'],
    ['yaml', 'YAML'],
  ]) {
    add(1, 'file_edited', { name: extension, detail: language });
  }
  for (const [extension, language] of [
    ['ts', 'TypeScript'],
    ['py', 'Python'],
    ['md', 'Markdown'],
  ])
    add(1, 'file_created', { name: extension, detail: language });
  add(1, 'git_commit');
  add(1, 'git_pr');
  if (entries.length !== 100) throw new Error(`the fact mix has ${entries.length} entries, not 100`);
  return [
    { idx: -1, kind: 'user_message', name: null, detail: null, command: null },
    { idx: -2, kind: 'assistant_message', name: null, detail: null, command: null },
    ...entries.map((entry, idx) => ({ idx, ...entry })),
  ];
}

/** The place of user u in user-id order: u * step mod users, a permutation that scatters each day's users. */
function userOrder(users) {
  const gcd = (a, b) => (b === 0 ? a : gcd(b, a % b));
  let step = 7919;
  while (gcd(step, users) !== 1) step += 1;
  return Array.from({ length: users }, (_, u) => (u * step) % users);
}

/** Day `n` (0-based) of a range that ends yesterday (UTC) and has `days` days. */
function dayOf(n, days) {
  const yesterday = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - 86_400_000;
  return new Date(yesterday - (days - 1 - n) * 86_400_000).toISOString().slice(0, 10);
}

export async function load({ db, params: p, log }) {
  const userDays = p.days * p.activeUsers;
  if (p.facts === 0) {
    log('BENCH_ANALYTICS_FACTS=0: nothing loaded (the analytics measurements are skipped)');
    return { skipped: true };
  }
  if (p.users < 1 || p.days < 1 || p.activeUsers < 1) throw new Error('BENCH_ANALYTICS_USERS, _DAYS and _ACTIVE_USERS: at least 1');
  if (p.activeUsers > p.users) throw new Error('BENCH_ANALYTICS_ACTIVE_USERS: at most BENCH_ANALYTICS_USERS (a user is active once a day)');
  // Every active user-day starts with a user message and an assistant message.
  for (const [variable, n] of [
    ['BENCH_ANALYTICS_FACTS', p.facts],
    ['BENCH_ANALYTICS_SMALL_FACTS', p.smallFacts],
  ]) {
    if (n < 2 * userDays)
      throw new Error(`${variable}: at least 2 per active user-day (${(2 * userDays).toLocaleString('en')} for ${p.days} days of ${p.activeUsers} users)`);
  }
  if (p.dayFacts < 2) throw new Error('BENCH_ANALYTICS_DAY_FACTS: at least 2');
  const dayUsers = Math.min(p.users, Math.ceil(p.dayFacts / DAY_FACTS_PER_USER));
  if (p.dayFacts < 2 * dayUsers) throw new Error('BENCH_ANALYTICS_DAY_FACTS: too few for BENCH_ANALYTICS_USERS');
  const firstDay = dayOf(0, p.days);
  const lastDay = dayOf(p.days - 1, p.days);
  const mix = JSON.stringify(mixEntries());

  const orgs = {};
  await bulkLoad(
    db,
    ['analytics_facts', 'token_usage_daily'],
    async () => {
      const started = Date.now();
      // generate_series() of a computed length is estimated at 1,000 rows: JIT compiles each statement for ~1 s.
      await db.query('SET LOCAL jit = off');
      // A database whose bench.loads was reset may still have them from before: start over.
      const slugs = Object.values(ORGS);
      const old = (await db.query('SELECT id FROM organizations WHERE slug = ANY($1)', [slugs])).rows.map((r) => r.id);
      if (old.length) {
        for (const table of ['analytics_facts', 'token_usage_daily', 'analytics_user_days', 'analytics_days', 'analytics_dirty_days']) {
          await db.query(`DELETE FROM ${table} WHERE organization_id = ANY($1)`, [old]);
        }
        await db.query('DELETE FROM organizations WHERE id = ANY($1)', [old]);
      }
      const order = userOrder(p.users);
      for (const [key, slug] of Object.entries(ORGS)) {
        const id = randomUUID();
        // User u of every organization has the same place in user-id order (the users endpoint's), so the two
        // measured organizations' pages hold the same user numbers, hence the same days.
        const sorted = Array.from({ length: p.users }, () => randomUUID()).sort();
        const userIds = order.map((place) => sorted[place]);
        await db.query(`INSERT INTO organizations (id, slug, name, features) VALUES ($1, $2, $3, '{}')`, [id, slug, `Analytics bench (${slug})`]);
        await db.query(
          `INSERT INTO users (id, organization_id, email, name, role)
           SELECT u.id, $1, 'user' || u.n || '@' || $2 || '.example', 'Analytics User ' || u.n, CASE u.n WHEN 1 THEN 'owner' ELSE 'member' END
           FROM unnest($3::uuid[]) WITH ORDINALITY AS u(id, n)`,
          [id, slug, userIds],
        );
        orgs[key] = { id, userIds, tag: Object.keys(ORGS).indexOf(key) + 1 };
      }
      log(`3 organizations of ${p.users.toLocaleString('en')} users (${seconds(started)} s)`);

      // The two measured organizations, a batch of days at a time: the same user-days, different numbers of facts.
      const batchDays = Math.max(1, Math.ceil(p.days / 10));
      for (let d0 = 0; d0 < p.days; d0 += batchDays) {
        const d1 = Math.min(p.days, d0 + batchDays) - 1;
        const range = { from: d0 * p.activeUsers, to: (d1 + 1) * p.activeUsers - 1, firstDay, active: p.activeUsers, users: p.users, userDays, mix };
        for (const [org, facts] of [
          [orgs.large, p.facts],
          [orgs.small, p.smallFacts],
        ]) {
          await db.query(insertFacts, factParams(org, facts, range));
          await db.query(insertUsage, usageParams(org, range));
        }
        log(
          `days ${d1 + 1} / ${p.days}: facts ${Math.round(((d1 + 1) / p.days) * p.facts).toLocaleString('en')} + ${Math.round(((d1 + 1) / p.days) * p.smallFacts).toLocaleString('en')} (${seconds(started)} s)`,
        );
      }
      // The one-day organization: yesterday only, ~300 facts for each of its users that day.
      const day = { from: 0, to: dayUsers - 1, firstDay: lastDay, active: dayUsers, users: p.users, userDays: dayUsers, mix };
      await db.query(insertFacts, factParams(orgs.day, p.dayFacts, day));
      await db.query(insertUsage, usageParams(orgs.day, day));
      log(`${p.dayFacts.toLocaleString('en')} facts of ${dayUsers} users on ${lastDay} (${seconds(started)} s)`);
    },
    log,
  );
  const { rows } = await db.query(
    `SELECT o.slug, (SELECT count(*)::int FROM analytics_facts f WHERE f.organization_id = o.id) AS facts,
            (SELECT count(*)::int FROM token_usage_daily t WHERE t.organization_id = o.id) AS usage
     FROM organizations o WHERE o.slug = ANY($1)`,
    [Object.values(ORGS)],
  );
  const count = (slug) => rows.find((r) => r.slug === slug);
  return {
    firstDay,
    lastDay,
    activeUserDays: userDays,
    facts: { [ORGS.large]: count(ORGS.large).facts, [ORGS.small]: count(ORGS.small).facts, [ORGS.day]: count(ORGS.day).facts },
    tokenUsageRows: count(ORGS.large).usage,
    dayUsers,
  };
}

// User-day i (from 0) of an organization is user u = (d * active + k) mod users, the k-th active user of day
// d = i / active: the active users rotate through all users. It holds floor((i+1) F / N) - floor(i F / N) of the
// F facts (N user-days), in sessions of up to 100 facts. Users keep their client, delegation level and model.
const userDay = `
  SELECT i, a.d, a.k, b.u, b.c, ((b.c + 99) / 100)::int AS sessions
  FROM generate_series($3::bigint, $4::bigint) i,
       LATERAL (SELECT (i / $5::int)::int AS d, (i % $5::int)::int AS k) a,
       LATERAL (SELECT ((a.d::bigint * $5::int + a.k) % $6::int)::int AS u,
                       (((i + 1) * $7::bigint) / $8::bigint - (i * $7::bigint) / $8::bigint)::int AS c) b`;

function factParams(org, facts, r) {
  return [org.id, r.firstDay, r.from, r.to, r.active, r.users, facts, r.userDays, r.mix, org.userIds, org.tag, CLIENTS, DELEGATION, AUTONOMY, MODELS];
}

// $1 organization, $2 its first day, $3..$4 user-days, $5 active users a day, $6 users, $7 facts, $8 user-days in all,
// $9 the mix, $10 user ids, $11 the organization's number (in session ids), $12-$15 clients, levels, models.
const insertFacts = `
WITH mix AS (SELECT * FROM jsonb_to_recordset($9::jsonb) AS m(idx int, kind text, name text, detail text, command text)),
ud AS (${userDay})
INSERT INTO analytics_facts (organization_id, day, user_id, session_id, kind, client, level, name, detail, command, txid)
SELECT $1::uuid, $2::date + ud.d, ($10::uuid[])[1 + ud.u],
       encode(int4send($11::int) || int4send(ud.d) || int4send(ud.u) || int4send((j - 1) % ud.sessions), 'hex')::uuid,
       m.kind,
       CASE WHEN m.kind = 'user_message' THEN ($12::text[])[1 + ud.u % 3] END,
       CASE m.kind WHEN 'user_message' THEN ($13::text[])[1 + ud.u / 3 % 5] WHEN 'tool_call' THEN ($14::text[])[1 + ud.u / 3 % 5] END,
       CASE WHEN m.kind IN ('assistant_message', 'token_report') THEN ($15::text[])[1 + ud.u % 3] ELSE m.name END,
       m.detail, m.command, tx.id
FROM ud
CROSS JOIN generate_series(1, ud.c) j
JOIN mix m ON m.idx = CASE j WHEN 1 THEN -1 WHEN 2 THEN -2 ELSE (j - 3 + ud.k + ud.d) % 100 END
CROSS JOIN (SELECT pg_current_xact_id()::text::bigint AS id) tx`;

function usageParams(org, r) {
  return [org.id, r.firstDay, r.from, r.to, r.active, r.users, 0, r.userDays, org.userIds, MODELS];
}

// The same token usage for the same user-day of any organization: the user's model, and every fourth
// user-day a second one; the opus model thinks.
const insertUsage = `
WITH ud AS (${userDay})
INSERT INTO token_usage_daily (organization_id, day, user_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, thinking_tokens)
SELECT $1::uuid, $2::date + ud.d, ($9::uuid[])[1 + ud.u], m.model,
       20000 + (ud.d * 131 + ud.u * 17 + m.slot * 7) % 180000,
       4000 + (ud.d * 37 + ud.u * 13 + m.slot * 11) % 40000,
       10000 + (ud.d * 53 + ud.u * 29 + m.slot * 5) % 90000,
       200000 + (ud.d * 71 + ud.u * 31 + m.slot * 3) % 1800000,
       CASE WHEN m.model LIKE '%opus%' THEN 1000 + (ud.d * 19 + ud.u * 7) % 20000 ELSE 0 END
FROM ud,
     LATERAL (SELECT model, slot FROM unnest(ARRAY[($10::text[])[1 + ud.u % 3], CASE WHEN (ud.u + ud.d) % 4 = 0 THEN ($10::text[])[1 + (ud.u + 1) % 3] END])
              WITH ORDINALITY AS x(model, slot) WHERE model IS NOT NULL) m`;
