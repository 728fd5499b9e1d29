// First: traces (when asked for) must see http, pg and fastify load.
import { tracing } from './platform/telemetry/start-tracing';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './app.factory';
import { ConfigError, loadConfig } from './config/app-config';
import { DemoSeeder } from './demo/demo.seeder';
import { SetupService } from './modules/auth';
import { DataDirectoryBusyError, EmbeddedPostgres } from './platform/database/embedded-postgres';
import { SchemaTooNewError } from './platform/database/open-database';
import { openOperatorChannel } from './cli/operator-channel';
import { WebConsole } from './platform/http/web-console';
import { Draining } from './modules/health/draining';

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  const app = await createApp(config);
  const logger = new Logger('Main');
  if (process.argv.includes('--demo')) await app.get(DemoSeeder).seed();

  // The CLI cannot open the embedded database while the server holds it: the server runs its commands.
  const embedded = config.engine === 'pglite' ? await EmbeddedPostgres.runningServer(config.dataDir) : null;
  const closeOperatorChannel = embedded ? await openOperatorChannel(app, embedded.socketDir) : async () => undefined;

  // SIGTERM/SIGINT: drain (still serving, /healthz 503, waiting clients answered), then stop listening, finish what is in
  // flight and close the database. A second signal cuts the drain short (Ctrl-C twice).
  const draining = app.get(Draining);
  let endDrain: (() => void) | undefined;
  const shutdown = async (signal: string) => {
    if (draining.draining) return endDrain?.();
    const drainMs = config.shutdownDrainMs;
    logger.log(
      drainMs > 0
        ? `${signal}: draining for ${drainMs} ms (/healthz answers 503; send the signal again to skip), then finishing in-flight requests and closing the database`
        : `${signal}: finishing in-flight requests, then closing the database`,
    );
    draining.begin();
    if (drainMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        endDrain = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    draining.close();
    setTimeout(() => {
      logger.error(`Shutdown took longer than ${config.SHUTDOWN_TIMEOUT_MS} ms; exiting`);
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS).unref();
    await closeOperatorChannel();
    await app.close();
    await tracing?.shutdown().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

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
  if (error instanceof ConfigError || error instanceof DataDirectoryBusyError || error instanceof SchemaTooNewError) {
    console.error(error.message);
  } else {
    console.error('Failed to start:', error);
  }
  process.exit(1);
});
