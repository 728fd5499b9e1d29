import { Injectable } from '@nestjs/common';
import { crc32, deflateSync } from 'node:zlib';
import { Principal } from '../modules/auth';
import { AgentWorkService, WorkClaims } from '../modules/agent-channel';
import { MessageRole, SessionMessages, SessionsService } from '../modules/sessions';

/**
 * A small PNG drawn here (`rows` of colored bars on a light background, 8 px each): real images,
 * so the demo data passes the same checks as yours, and something to see when a client shows them.
 */
function barsPng(rows: Array<[number, number, number]>, width = 96): string {
  const height = rows.length * 8 + 8;
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const bar = y >= 4 && y < height - 4 && (y - 4) % 8 < 6 ? rows[Math.floor((y - 4) / 8)] : undefined;
    for (let x = 0; x < width; x++) {
      const [r, g, b] = bar && x >= 4 && x < width - 4 ? bar : [246, 247, 249];
      raw.set([r, g, b], y * (width * 3 + 1) + 1 + x * 3);
    }
  }
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const framed = Buffer.alloc(body.length + 8);
    framed.writeUInt32BE(data.length, 0);
    body.copy(framed, 4);
    framed.writeUInt32BE(crc32(body), body.length + 4);
    return framed;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64');
}
const [GREEN, RED, GREY] = [
  [46, 160, 67],
  [207, 34, 46],
  [200, 204, 209],
] as Array<[number, number, number]>;
/** A CI run: three jobs passed, the integration tests failed, one skipped. */
const SCREENSHOT_PNG = barsPng([GREEN, GREEN, GREEN, RED, GREY]);
/** The invoice as rendered: a header and no lines. */
const BLANK_INVOICE_PNG = barsPng([[31, 111, 235], GREY], 64);
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
    private readonly messages: SessionMessages,
    private readonly agent: AgentWorkService,
    private readonly claims: WorkClaims,
  ) {}

  async seedAcme(people: Required<DemoPeople>): Promise<void> {
    if (await this.hasSessions(people.owner)) return;

    // 1. A finished conversation: screenshot, thinking, a tool call and its result, a hook run.
    const flaky = await this.create(people.member, 'Fix the flaky CI build', { model: 'model-a', reasoningEffort: 'high', interactionMode: 'auto' });
    await this.messages.add(people.member, flaky, {
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
              thinking:
                'Intermittent failures in integration tests usually mean shared state or timing. Run the suite serially first to see whether the order matters.',
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
    await this.agent.reportUsage(people.manager, flaky, {
      turnId: turn,
      model: 'model-a',
      inputTokens: 18_250,
      outputTokens: 1_420,
      cacheReadTokens: 12_000,
      thinkingTokens: 310,
    });
    await this.agent.endTurn(people.manager, flaky, { turnId: turn, assistantActiveTimeMs: 94_000 });

    // 2. Work an agent is doing right now.
    const running = await this.create(people.manager, 'Upgrade the payment SDK to v5', { model: 'model-b', reasoningEffort: 'medium' });
    await this.messages.add(people.manager, running, {
      text: 'Upgrade our payment SDK from v4 to v5 and adapt the call sites. Keep the public API of billing/ unchanged.',
    });
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
    await this.messages.add(people.owner, waiting, {
      text: 'Add cursor pagination to GET /orders, following the attached API guidelines.',
      files: [
        { type: 'base64', mediaType: 'application/pdf', data: SPEC_PDF, name: 'api-guidelines.pdf' },
        { type: 'text', mediaType: 'text/plain', data: 'limit: 1-100, default 20\ncursor: opaque\n', name: 'pagination.md', mime: 'text/markdown' },
      ],
    });

    // 4. A fresh, empty session.
    await this.create(people.member, 'Explore the analytics module', {});

    // 5. A finished investigation with every other kind of block: redacted thinking, a file read back as a
    //    document, a failing tool, an image result, hooks that failed and completed.
    await this.seedInvoice(people);
  }

  private async seedInvoice(people: Required<DemoPeople>): Promise<void> {
    const invoice = await this.create(people.member, 'Invoice PDFs render blank', { model: 'model-b', reasoningEffort: 'medium', autonomyLevel: 'medium' });
    await this.messages.add(people.member, invoice, {
      text: "Customers say the invoice PDF is blank since yesterday's release. Here is one of them; can you find out why?",
      files: [{ type: 'base64', mediaType: 'application/pdf', data: SPEC_PDF, name: 'invoice-2026-0412.pdf', parsedData: '' }],
    });
    const turn = await this.take(people.member);
    const now = Date.now();
    await this.agent.appendMessages(people.member, invoice, {
      turnId: turn,
      messages: [
        {
          role: MessageRole.Assistant,
          modelId: 'model-b',
          reasoningEffort: 'medium',
          content: [
            { type: 'redacted_thinking', data: 'EuYBCkQYAiJAk7Yx0dGVtby1yZWRhY3RlZC10aGlua2luZw==' },
            { type: 'text', text: 'The attached PDF has a page but no text. Let me look at the template the renderer uses.' },
            { type: 'tool_use', id: 'toolu_demo_3', name: 'Read', input: { file_path: 'templates/invoice.md' } },
            { type: 'tool_use', id: 'toolu_demo_4', name: 'Bash', input: { command: 'npm run render:invoice -- --id 2026-0412' } },
          ],
        },
        {
          role: MessageRole.System,
          hookEventName: 'PreToolUse',
          hookMatcher: 'Bash',
          hookCommands: [{ command: './scripts/check-command.sh', timeout: 10 }],
          hookStatus: 'error',
          hookResults: [{ exitCode: 1, stdout: '', stderr: 'check-command.sh: jq: command not found' }],
          hookToolCallId: 'toolu_demo_4',
          hookStartTime: now - 9000,
          hookEndTime: now - 8950,
          content: [{ type: 'text', text: 'PreToolUse hook ./scripts/check-command.sh failed (exit 1); the command ran anyway: a failing hook never blocks.' }],
        },
        {
          role: MessageRole.Tool,
          content: [
            {
              type: 'tool_result',
              toolUseId: 'toolu_demo_3',
              content: [
                { type: 'text', text: 'templates/invoice.md (the template, as a document):' },
                {
                  type: 'document',
                  source: {
                    type: 'text',
                    mediaType: 'text/plain',
                    data: '# Invoice {{number}}\n\n{{#each line}}\n| {{description}} | {{amount}} |\n{{/each}}\n',
                    name: 'invoice.md',
                    mime: 'text/markdown',
                  },
                },
              ],
            },
            {
              type: 'tool_result',
              toolUseId: 'toolu_demo_4',
              isError: true,
              content: 'Error: Missing helper: "each" is not registered (did you mean "eachLine"?)\n    at render (src/billing/pdf.ts:41:11)',
            },
          ],
        },
        {
          role: MessageRole.Assistant,
          modelId: 'model-b',
          content: [
            {
              type: 'text',
              text: "Yesterday's upgrade renamed the `each` helper. Let me render the invoice after registering it again, and look at the result.",
            },
            { type: 'tool_use', id: 'toolu_demo_5', name: 'Screenshot', input: { path: 'out/invoice-2026-0412.pdf', page: 1 } },
          ],
        },
        {
          role: MessageRole.Tool,
          content: [
            {
              type: 'tool_result',
              toolUseId: 'toolu_demo_5',
              content: [{ type: 'image', source: { type: 'base64', mediaType: 'image/png', data: BLANK_INVOICE_PNG } }],
            },
          ],
        },
        {
          role: MessageRole.Assistant,
          modelId: 'model-b',
          content: [
            {
              type: 'text',
              text:
                "Fixed: the template engine's upgrade renamed `each` to `eachLine`, so every line was dropped without an error in production. " +
                'I registered `each` as an alias in src/billing/pdf.ts and added a test that renders an invoice with two lines.',
            },
          ],
        },
        {
          role: MessageRole.System,
          hookEventName: 'Stop',
          hookCommands: [{ command: 'notify-send "Agent finished"', timeout: 5 }],
          hookStatus: 'completed',
          hookResults: [{ exitCode: 0, stdout: '', stderr: '', suppressOutput: true }],
          hookStartTime: now - 1000,
          hookEndTime: now - 990,
          hiddenFromUserViews: true,
          content: [{ type: 'text', text: 'Stop hook completed (exit 0).' }],
        },
      ],
    });
    await this.agent.reportUsage(people.member, invoice, { turnId: turn, model: 'model-b', inputTokens: 9_800, outputTokens: 860, thinkingTokens: 420 });
    await this.agent.endTurn(people.member, invoice, { turnId: turn, assistantActiveTimeMs: 41_000 });
  }

  async seedGlobex(people: DemoPeople): Promise<void> {
    if (await this.hasSessions(people.owner)) return;
    const session = await this.create(people.owner, 'Write a README for the CLI', { model: 'model-a', reasoningEffort: 'low' });
    await this.messages.add(people.owner, session, { text: 'Write a README for our command-line tool: install, usage, and the three most used commands.' });
  }

  /** Work routed to a computer whose agent is not running: the session says no agent will take it. */
  async seedUnanswered(principal: Principal, computerId: string, title: string, text: string): Promise<void> {
    const { sessionId } = (await this.sessions.create(principal, { title, computerId, sessionSettings: { model: 'model-a' } })).body;
    await this.messages.add(principal, sessionId, { text });
  }

  private async hasSessions(principal: Principal): Promise<boolean> {
    return (await this.sessions.list(principal, { limit: 1 })).items.length > 0;
  }

  private async create(principal: Principal, title: string, sessionSettings: Record<string, string>): Promise<string> {
    return (await this.sessions.create(principal, { title, sessionSettings })).body.sessionId;
  }

  private async take(principal: Principal): Promise<string> {
    const { work } = (await this.claims.claim(principal, {})).body;
    if (!work) throw new Error('Demo: the work just added was not there to take');
    return work.turnId;
  }
}
