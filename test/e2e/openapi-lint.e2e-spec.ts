import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { createConfig, lintFromString, NormalizedProblem } from '@redocly/openapi-core';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/app-config';
import { buildOpenApiDocument } from '../../src/platform/http/openapi-document';

interface Operation {
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { example?: Record<string, unknown> }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

/** The rule that checks every example against the schema beside it: a warning in `recommended`, held here as an error. */
const EXAMPLES = 'no-invalid-media-type-examples';

/** What fails the document: any error of `recommended`, and any example its own schema refuses. */
const failing = (problems: NormalizedProblem[]) => problems.filter((problem) => problem.severity === 'error' || problem.ruleId === EXAMPLES);

/** A problem as one line: rule, where in the document, and what is wrong. */
const line = (problem: NormalizedProblem) =>
  `${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer ?? ''}: ${problem.message.replace(/\s+/g, ' ').slice(0, 300)}`;

/**
 * The document the server publishes at /docs-json (the same function, built as `export-openapi` builds it: Nest's
 * preview mode, no database, no port) under Redocly's `recommended` rules, as a reader's tools see it. It must give no
 * error and no example its own schema refuses; the warnings `recommended` still gives are listed in
 * docs/testing.md with why they stay.
 */
describe("OpenAPI document under Redocly's recommended rules", () => {
  let document: Document;
  const recommended = createConfig({ extends: ['recommended'] });
  const lint = async (doc: Document) => lintFromString({ source: JSON.stringify(doc), absoluteRef: 'docs-json.json', config: await recommended });

  beforeAll(async () => {
    // Another APP_URL than BASE_URL, so that the web application's paths carry their own `servers`.
    const config = loadConfig({ BASE_URL: 'https://api.example.test', APP_URL: 'https://app.example.test' });
    const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), new FastifyAdapter(), {
      preview: true,
      logger: false,
      abortOnError: false,
    });
    try {
      document = buildOpenApiDocument(app, config) as unknown as Document;
    } finally {
      await app.close();
    }
  });

  it('gives no error and no example that fails its own schema', async () => {
    const problems = await lint(document);
    expect(failing(problems).map(line)).toEqual([]);
    // Every operation was read: the document is the whole API, not an empty shell that passes.
    expect(Object.keys(document.paths).length).toBeGreaterThan(50);
  });

  it('fails a document that leaves an open operation unsaid or shows an example its schema refuses', async () => {
    const broken = structuredClone(document);
    delete broken.paths['/livez'].get.security;
    broken.paths['/api/v0/sessions'].get.responses['401'].content!['application/json'].example!.requestId = 'req_1';
    expect(
      failing(await lint(broken))
        .map(line)
        .sort(),
    ).toEqual([
      expect.stringMatching(/^error security-defined #\/paths\/~1livez\/get: /),
      expect.stringMatching(/^warn no-invalid-media-type-examples #\/paths\/~1api~1v0~1sessions\/get\/responses\/401\/.*requestId/),
    ]);
  });
});
