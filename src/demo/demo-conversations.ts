import { Injectable } from '@nestjs/common';
import { Principal } from '../modules/auth';
import { AgentWorkService, MessageRole, SessionsService } from '../modules/sessions';

/** A 1x1 PNG and a one-page PDF: real files, so the demo data passes the same checks as yours. */
const SCREENSHOT_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const SPEC_PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj ' +
    '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
).toString('base64');

export interface DemoPeople {
  owner: Principal;
  manager?: Principal;
  member?: Principal;
}

/**
 * Realistic conversations for the demo organizations, written through the same services the API
 * uses (user messages, an agent taking the work, its messages, usage and the end of its turn).
 * Only an organization without sessions gets them, so re-running the demo adds nothing.
 */
@Injectable()
export class DemoConversations {
  constructor(
    private readonly sessions: SessionsService,
    private readonly agent: AgentWorkService,
  ) {}

  async seedAcme(people: Required<DemoPeople>): Promise<void> {
    if (await this.hasSessions(people.owner)) return;

    // 1. A finished conversation: screenshot, thinking, a tool call and its result, a hook run.
    const flaky = await this.create(people.member, 'Fix the flaky CI build', { model: 'model-a', reasoningEffort: 'high', interactionMode: 'auto' });
    await this.sessions.addMessage(people.member, flaky, {
      text: 'The CI build on main fails about one run in five in the integration tests. Here is the failing job. Can you find out why and fix it?',
      images: [{ type: 'base64', mediaType: 'image/png', data: SCREENSHOT_PNG }],
    });
    const turn = await this.take(people.manager);
    await this.agent.appendMessages(people.manager, flaky, {
      turnId: turn,
      messages: [
        {
          role: MessageRole.Assistant,
          modelId: 'model-a',
          reasoningEffort: 'high',
          content: [
            {
              type: 'thinking',
              thinking: 'Intermittent failures in integration tests usually mean shared state or timing. Run the suite serially first to see whether the order matters.',
              signature: 'sig-demo-1',
              signatureProvider: 'agent-platform',
              durationMs: 2100,
            },
            { type: 'text', text: 'Let me run the integration tests serially to see whether they depend on each other.' },
            { type: 'tool_use', id: 'toolu_demo_1', name: 'bash', input: { command: 'npm run test:integration -- --runInBand' } },
          ],
        },
        {
          role: MessageRole.Tool,
          content: [
            {
              type: 'tool_result',
              toolUseId: 'toolu_demo_1',
              content:
                'PASS test/orders.int.ts\nFAIL test/invoices.int.ts\n  ● creates an invoice\n    expected 1 row, received 2 (left over from test/orders.int.ts)\nTests: 1 failed, 41 passed',
            },
          ],
        },
        {
          role: MessageRole.System,
          hookEventName: 'PostToolUse',
          hookMatcher: 'bash',
          hookCommands: [{ command: './scripts/lint-changed.sh', timeout: 30 }],
          hookStatus: 'completed',
          hookResults: [{ exitCode: 0, stdout: 'lint: no changed files', stderr: '' }],
          hookToolCallId: 'toolu_demo_1',
          hookStartTime: Date.now() - 4000,
          hookEndTime: Date.now() - 3900,
          hiddenFromUserViews: true,
          content: [{ type: 'text', text: 'PostToolUse hook ./scripts/lint-changed.sh completed (exit 0).' }],
        },
        {
          role: MessageRole.Assistant,
          modelId: 'model-a',
          content: [
            {
              type: 'text',
              text:
                'Found it: `orders.int.ts` leaves an invoice row behind, so `invoices.int.ts` fails whenever it runs after it on the same worker. ' +
                'I wrapped each integration test in a transaction that is rolled back afterwards; 20 runs in a row now pass.',
            },
          ],
        },
      ],
    });
    await this.agent.reportUsage(people.manager, flaky, { turnId: turn, model: 'model-a', inputTokens: 18_250, outputTokens: 1_420, cacheReadTokens: 12_000, thinkingTokens: 310 });
    await this.agent.endTurn(people.manager, flaky, { turnId: turn, assistantActiveTimeMs: 94_000 });

    // 2. Work an agent is doing right now.
    const running = await this.create(people.manager, 'Upgrade the payment SDK to v5', { model: 'model-b', reasoningEffort: 'medium' });
    await this.sessions.addMessage(people.manager, running, { text: 'Upgrade our payment SDK from v4 to v5 and adapt the call sites. Keep the public API of billing/ unchanged.' });
    const upgrade = await this.take(people.manager);
    await this.agent.appendMessages(people.manager, running, {
      turnId: upgrade,
      messages: [
        {
          role: MessageRole.Assistant,
          modelId: 'model-b',
          content: [
            { type: 'text', text: 'Reading the v5 migration guide and searching for call sites.' },
            { type: 'tool_use', id: 'toolu_demo_2', name: 'grep', input: { pattern: 'payments\\.charge\\(', path: 'src/' } },
          ],
        },
      ],
    });

    // 3. Work waiting for an agent, with a specification attached.
    const waiting = await this.create(people.owner, 'Add pagination to the orders API', { model: 'model-a' });
    await this.sessions.addMessage(people.owner, waiting, {
      text: 'Add cursor pagination to GET /orders, following the attached API guidelines.',
      files: [
        { type: 'base64', mediaType: 'application/pdf', data: SPEC_PDF, name: 'api-guidelines.pdf' },
        { type: 'text', mediaType: 'text/plain', data: 'limit: 1-100, default 20\ncursor: opaque\n', name: 'pagination.md', mime: 'text/markdown' },
      ],
    });

    // 4. A fresh, empty session.
    await this.create(people.member, 'Explore the analytics module', {});
  }

  async seedGlobex(people: DemoPeople): Promise<void> {
    if (await this.hasSessions(people.owner)) return;
    const session = await this.create(people.owner, 'Write a README for the CLI', { model: 'model-a', reasoningEffort: 'low' });
    await this.sessions.addMessage(people.owner, session, { text: 'Write a README for our command-line tool: install, usage, and the three most used commands.' });
  }

  private async hasSessions(principal: Principal): Promise<boolean> {
    return (await this.sessions.list(principal, { limit: 1 })).items.length > 0;
  }

  private async create(principal: Principal, title: string, sessionSettings: Record<string, string>): Promise<string> {
    return (await this.sessions.create(principal, { title, sessionSettings })).body.sessionId;
  }

  private async take(principal: Principal): Promise<string> {
    const { work } = (await this.agent.claim(principal, {})).body;
    if (!work) throw new Error('Demo: the work just added was not there to take');
    return work.turnId;
  }
}
