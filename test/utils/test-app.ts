import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createApp } from '../../src/app.factory';
import { AppConfig, loadConfig } from '../../src/config/app-config';
import { CheckedAgent, checkedAgent, OpenApiOracle, oracleOf } from './openapi-oracle';
import { createTestDatabase, TestDatabase } from './test-database';

export interface TestApp {
  app: NestFastifyApplication;
  config: AppConfig;
  database: TestDatabase;
  /** Real HTTP requests against the running server; every answer is checked against its OpenAPI document. */
  http(): CheckedAgent;
  /** That check, for answers read another way (plain `fetch`). */
  oracle(): OpenApiOracle;
  close(): Promise<void>;
}

/**
 * The real application listening on an ephemeral port, on a fresh database of its own, or on
 * the one given (which it then leaves in place when closed).
 */
export async function startTestApp(env: Record<string, string> = {}, existing?: TestDatabase): Promise<TestApp> {
  const database = existing ?? (await createTestDatabase());
  // No local agents unless a test asks for them: they would take work tests expect to stay pending.
  // No rate limits unless a test asks for them: a suite makes more requests a minute than one client should.
  const config = loadConfig({
    // TEST_LOG_LEVEL=error (or debug) shows what the app logs while a test runs.
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_POOL_SIZE: '5',
    LOCAL_AGENTS: 'off',
    RATE_LIMIT_CREDENTIAL_PER_MINUTE: '0',
    RATE_LIMIT_ORGANIZATION_PER_MINUTE: '0',
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0',
    WORKER_RATE_LIMIT_PER_MINUTE: '0',
    ...database.env,
    ...env,
  });
  const app = await createApp(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const oracle = oracleOf(app, config);
  return {
    app,
    config,
    database,
    http: () => checkedAgent(request(app.getHttpServer()), oracle),
    oracle: () => oracle,
    close: async () => {
      await app.close();
      if (!existing) await database.drop();
    },
  };
}
