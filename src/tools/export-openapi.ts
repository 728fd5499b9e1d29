import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from '../app.module';
import { loadConfig } from '../config/app-config';
import { buildOpenApiDocument } from '../platform/http/openapi-document';

/**
 * Writes the server's OpenAPI document to a file, with no database and no port: the web console's API types are
 * generated from it at build time (bin/agent-platform.js), so a contract change breaks the console's build.
 *
 * Nest's preview mode reads every module, controller and decorator but makes no provider (nothing connects,
 * nothing listens): the document is the one the running server publishes at /docs-json, for the default
 * configuration (its `servers` name the default BASE_URL; the console calls its own origin).
 */
async function main(out: string): Promise<void> {
  const config = loadConfig({});
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), new FastifyAdapter(), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  const document = buildOpenApiDocument(app, config);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
  await app.close();
}

const out = process.argv[2];
if (!out) {
  console.error('usage: export-openapi <file.json>');
  process.exit(64);
}
main(resolve(out)).catch((error: unknown) => {
  console.error('export-openapi failed:', error);
  process.exit(1);
});
