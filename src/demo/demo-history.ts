import { Injectable } from '@nestjs/common';
import { Principal } from '../modules/auth';
import { HistoryImportService, MessageRole, PastSession } from '../modules/sessions';

const DAY_MS = 86_400_000;
/** How far back the demo's history goes. */
export const DEMO_HISTORY_DAYS = 60;

/** A small deterministic PRNG (mulberry32): the same history on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Persona {
  principal: Principal;
  /** Chance of working on a weekday (weekends: a third of it). */
  activity: number;
  sources: string[];
  settings: Array<PastSession['settings']>;
  model: string;
}

/** A tool call of a past assistant message, as the history import takes it. */
type ToolUse = Extract<PastSession['messages'][number]['content'][number], { type: 'tool_use' }>;

const FILES = [
  'src/orders/orders.service.ts',
  'src/billing/invoice.ts',
  'web/src/components/Cart.tsx',
  'scripts/migrate.py',
  'services/search/main.go',
  'README.md',
  'Dockerfile',
  'docs/api.md',
  'src/orders/orders.service.spec.ts',
  'infra/main.tf',
];
const TASKS = [
  'Fix the flaky checkout test',
  'Add an index for the slow orders query',
  'Write the release notes for 2.4',
  'Refactor the invoice PDF renderer',
  'Upgrade the search service to Go 1.23',
  'Add retries to the webhook sender',
  'Document the public orders API',
  'Investigate the memory growth in the worker',
];
const SLASH = ['/review', '/test', '/compact', '/pr-comments', '/init'];
const SKILLS = ['pdf', 'frontend-design', 'release-notes'];

/**
 * About 60 days of realistic work in the acme organization, written with past timestamps through the
 * same path live activity takes (sessions, user and agent messages, tool calls, hooks, usage), so
 * the analytics endpoints show real data. Only once: skipped when acme has sessions from before today.
 */
@Injectable()
export class DemoHistory {
  constructor(private readonly history: HistoryImportService) {}

  async seedAcme(people: { owner: Principal; manager: Principal; member: Principal; guest: Principal }, now = new Date()): Promise<number> {
    const startOfToday = Date.parse(now.toISOString().slice(0, 10));
    if (await this.history.hasSessionsBefore(people.owner.organizationId, new Date(startOfToday))) return 0;
    const personas: Persona[] = [
      {
        principal: people.manager,
        activity: 0.9,
        sources: ['cli_tui', 'cli_tui', 'web', 'cli_exec'],
        settings: [{ autonomyLevel: 'high' }, { autonomyLevel: 'medium' }, { interactionMode: 'spec', autonomyLevel: 'medium' }],
        model: 'model-a',
      },
      {
        principal: people.member,
        activity: 0.8,
        sources: ['cli_tui', 'cli_acp', 'cli_exec'],
        settings: [{ autonomyLevel: 'medium' }, { autonomyLevel: 'low' }],
        model: 'model-b',
      },
      {
        principal: people.owner,
        activity: 0.45,
        sources: ['web', 'desktop'],
        settings: [{ interactionMode: 'spec' }, { autonomyLevel: 'low' }, { interactionMode: 'ask' }],
        model: 'model-a',
      },
      { principal: people.guest, activity: 0.2, sources: ['web'], settings: [{ autonomyLevel: 'off' }], model: 'model-b' },
    ];
    const rand = random(20260114);
    const pick = <T>(list: T[]): T => list[Math.floor(rand() * list.length)];
    const sessions: PastSession[] = [];
    for (let daysAgo = DEMO_HISTORY_DAYS; daysAgo >= 1; daysAgo--) {
      const day = startOfToday - daysAgo * DAY_MS;
      const weekend = [0, 6].includes(new Date(day).getUTCDay());
      for (const persona of personas) {
        if (rand() > persona.activity * (weekend ? 0.33 : 1)) continue;
        const count = 1 + Math.floor(rand() * 3);
        for (let s = 0; s < count; s++) {
          // Working hours, 08:00-18:00 UTC.
          let at = day + (8 + rand() * 10) * 3_600_000;
          const tick = (minutes: number) => (at += minutes * 60_000 * (0.5 + rand()));
          const past: PastSession = {
            organizationId: persona.principal.organizationId,
            ownerId: persona.principal.userId,
            title: pick(TASKS),
            settings: { model: persona.model, ...pick(persona.settings) },
            createdAt: new Date(at),
            messages: [],
            usage: [],
          };
          const source = pick(persona.sources);
          const turns = 1 + Math.floor(rand() * 4);
          for (let turn = 0; turn < turns; turn++) {
            const text =
              turn === 0 && rand() < 0.25
                ? `${pick(SLASH)} ${past.title.toLowerCase()}`
                : `${turn === 0 ? past.title : 'Looks good, now also cover the edge cases'}.`;
            past.messages.push({ role: MessageRole.User, content: [{ type: 'text', text }], createdAt: new Date(tick(2)), userMessageSource: source });
            const calls = 1 + Math.floor(rand() * 6);
            const toolUses: ToolUse[] = [];
            for (let c = 0; c < calls; c++) toolUses.push(toolUse(`toolu_${sessions.length}_${turn}_${c}`, rand, pick));
            past.messages.push({
              role: MessageRole.Assistant,
              content: [{ type: 'text', text: 'Working on it.' }, ...toolUses],
              attributes: { modelId: persona.model },
              createdAt: new Date(tick(1)),
            });
            past.messages.push({
              role: MessageRole.Tool,
              content: toolUses.map((use) => ({ type: 'tool_result' as const, toolUseId: use.id, content: 'ok' })),
              createdAt: new Date(tick(1)),
            });
            if (rand() < 0.3) {
              past.messages.push({
                role: MessageRole.System,
                content: [{ type: 'text', text: 'PostToolUse hook completed (exit 0).' }],
                attributes: {
                  hookEventName: 'PostToolUse',
                  hookMatcher: 'Edit',
                  hookCommands: [{ command: './scripts/lint-changed.sh', timeout: 30 }],
                  hookStatus: 'completed',
                },
                createdAt: new Date(tick(0.2)),
              });
            }
            past.messages.push({
              role: MessageRole.Assistant,
              content: [{ type: 'text', text: 'Done: the change is in and the tests pass.' }],
              attributes: { modelId: persona.model },
              createdAt: new Date(tick(3)),
            });
            const input = 4_000 + Math.floor(rand() * 20_000);
            past.usage.push({
              model: persona.model,
              at: new Date(at),
              usage: {
                inputTokens: input,
                outputTokens: Math.floor(input / 8),
                cacheCreationTokens: turn === 0 ? Math.floor(input / 2) : 0,
                cacheReadTokens: turn === 0 ? 0 : input * 2,
                thinkingTokens: persona.model === 'model-b' ? Math.floor(input / 20) : 0,
              },
            });
          }
          sessions.push(past);
        }
      }
    }
    // One transaction: a commit per session would cost more than writing it.
    await this.history.importSessions(sessions);
    return sessions.length;
  }
}

function toolUse(id: string, rand: () => number, pick: <T>(list: T[]) => T): ToolUse {
  const roll = rand();
  if (roll < 0.25) return { type: 'tool_use', id, name: 'Read', input: { file_path: pick(FILES) } };
  if (roll < 0.45) return { type: 'tool_use', id, name: 'Edit', input: { file_path: pick(FILES), old_string: 'a', new_string: 'b' } };
  if (roll < 0.52) return { type: 'tool_use', id, name: 'Write', input: { file_path: pick(FILES), content: '...' } };
  if (roll < 0.62) return { type: 'tool_use', id, name: 'Grep', input: { pattern: 'TODO' } };
  if (roll < 0.74)
    return {
      type: 'tool_use',
      id,
      name: 'Bash',
      input: { command: pick(['npm test', 'npm run lint', 'git add -A && git commit -m "Fix"', 'gh pr create --fill', 'go test ./...']) },
    };
  if (roll < 0.82)
    return { type: 'tool_use', id, name: pick(['mcp__github__search_issues', 'mcp__GitHub__get_pull_request', 'mcp__linear__create_issue']), input: {} };
  if (roll < 0.86) return { type: 'tool_use', id, name: 'Skill', input: { skill: pick(SKILLS) } };
  return { type: 'tool_use', id, name: pick(['Glob', 'TodoWrite', 'WebFetch']), input: {} };
}
