// First: traces (when asked for) must see http, pg and fastify load.
import { tracing } from './platform/telemetry/start-tracing';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './app.factory';
import { ConfigError, loadConfig } from './config/app-config';
import { DemoSeeder } from './demo/demo.seeder';
import { SetupService } from './modules/auth';
import { DataDirectoryBusyError, EmbeddedPostgres } from './platform/database/embedded-postgres';
import { openOperatorChannel } from './cli/operator-channel';
import { WebConsole } from './platform/http/web-console';

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  const app = await createApp(config);
  const logger = new Logger('Main');
  if (process.argv.includes('--demo')) await app.get(DemoSeeder).seed();

  // The CLI cannot open the embedded database while the server holds it: the server runs its commands.
  const embedded = config.engine === 'pglite' ? await EmbeddedPostgres.runningServer(config.dataDir) : null;
  const closeOperatorChannel = embedded ? await openOperatorChannel(app, embedded.socketDir) : async () => undefined;

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal}: finishing in-flight requests, then closing the database`);
    setTimeout(() => {
      logger.error(`Shutdown took longer than ${config.SHUTDOWN_TIMEOUT_MS} ms; exiting`);
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS).unref();
    await closeOperatorChannel();
    await app.close();
    await tracing?.shutdown().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ port: config.PORT, host: config.HOST });
  await app.get(SetupService).announce(config.baseUrl);
  // A few lines saying where everything is (the database and each part log their own start).
  logger.log(`Agent Platform listening on ${await app.getUrl()} in ${Date.now() - startedAt} ms`);
  logger.log(`Console: ${config.appUrl}/${WebConsole.built() ? '' : ' (not built: npm run build)'}`);
  logger.log(`API:  ${config.baseUrl}/api/v0 (analytics: ${config.baseUrl}/api/v1/analytics)`);
  logger.log(`Docs: ${config.baseUrl}/docs (OpenAPI document: ${config.baseUrl}/docs-json)`);
  logger.log(`Data: ${config.dataLocation}`);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirectoryBusyError) {
    console.error(error.message);
  } else {
    console.error('Failed to start:', error);
  }
  process.exit(1);
});
