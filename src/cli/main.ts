import 'reflect-metadata';
import { INestApplicationContext, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppConfig, ConfigError, loadConfig } from '../config/app-config';
import { DataDirectoryBusyError, EmbeddedPostgres } from '../platform/database/embedded-postgres';
import { DomainError } from '../platform/http/domain-error';
import { CliModule } from './cli.module';
import { COMMANDS, USAGE, UsageError } from './commands';
import { askRunningServer, OperatorAnswer } from './operator-channel';
import { runReadiness } from './readiness-command';
import { backup, moveToPostgres, restore } from './backup-commands';
import { SnapshotError } from '../platform/database/snapshot';
import { resolve } from 'node:path';

/** A backup through the server takes as long as the database is large. */
const BACKUP_TIMEOUT_MS = 3_600_000;

/** Exit codes: 0 done, 1 refused (e.g. not found, already exists), 2 database busy, 64 usage. */
async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === 'help' || name === '--help') {
    console.log(USAGE);
    return name ? 0 : 64;
  }
  // Evaluating a repository needs no database.
  if (name === 'readiness') return runReadiness(args);
  // A restore opens a database that must be new; a move reads the embedded one (through its server if it runs).
  if (name === 'restore' || name === 'move-to-postgres') {
    if (args.length !== 1) throw new UsageError(`Wrong number of arguments.\n\n${USAGE}`);
    const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
    // Standard output is the result's JSON alone, as for every command.
    Logger.overrideLogger(false);
    const result = name === 'restore' ? await restore(config, resolve(args[0])) : await moveToPostgres(config, args[0], (file) => backupTo(config, file));
    console.log(JSON.stringify(result, null, 2));
    return 0;
  }
  // The server writes the file on the CLI's behalf: the path it is given must not depend on its folder.
  if (name === 'backup' && args.length === 1) args[0] = resolve(args[0]);
  const command = COMMANDS[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${USAGE}`);
    return 64;
  }
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  // A server runs on the embedded database: straight to it, without opening (and being refused) the database first.
  const running = config.engine === 'pglite' ? await EmbeddedPostgres.runningServer(config.dataDir) : null;
  if (running) {
    const answer = await askRunningServer(running.socketDir, { command: name, args }, name === 'backup' ? BACKUP_TIMEOUT_MS : undefined).catch(() => null);
    if (answer) return report(answer);
  }
  let app: INestApplicationContext;
  try {
    app = await NestFactory.createApplicationContext(CliModule.register(config), { logger: false, abortOnError: false });
  } catch (error) {
    // The embedded database is the running server's: it runs the command for us.
    if (error instanceof DataDirectoryBusyError && error.server) return viaRunningServer(error.server.socketDir, name, args, error);
    throw error;
  }
  try {
    console.log(JSON.stringify(await command(app, args), null, 2));
    return 0;
  } finally {
    await app.close();
  }
}

/** A snapshot of the configured database into `file`: by the server that holds the embedded database, if one runs. */
async function backupTo(config: AppConfig, file: string): Promise<void> {
  let app: INestApplicationContext;
  try {
    app = await NestFactory.createApplicationContext(CliModule.register(config), { logger: false, abortOnError: false });
  } catch (error) {
    if (!(error instanceof DataDirectoryBusyError && error.server)) throw error;
    const answer = await askRunningServer(error.server.socketDir, { command: 'backup', args: [file] }, BACKUP_TIMEOUT_MS);
    if (!answer.ok) throw new SnapshotError(answer.message);
    return;
  }
  try {
    await backup(app, [file]);
  } finally {
    await app.close();
  }
}

async function viaRunningServer(socketDir: string, command: string, args: string[], busy: DataDirectoryBusyError): Promise<number> {
  let answer: OperatorAnswer;
  try {
    answer = await askRunningServer(socketDir, { command, args }, command === 'backup' ? BACKUP_TIMEOUT_MS : undefined);
  } catch {
    throw busy;
  }
  return report(answer);
}

/** Prints the running server's answer; the exit code. */
function report(answer: OperatorAnswer): number {
  if (answer.ok) {
    console.log(JSON.stringify(answer.result, null, 2));
    return 0;
  }
  console.error(answer.usage ? `${answer.message}\n\n${USAGE}` : answer.message);
  return answer.usage ? 64 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ConfigError) {
      console.error(error.message);
      process.exit(64);
    }
    if (error instanceof DataDirectoryBusyError) {
      console.error(
        `${error.message}\nNothing was changed: the server holding it did not answer on its operator socket. ` +
          'Stop it, run this command, then start it again. With PostgreSQL (DATABASE_URL) the CLI runs beside running servers.',
      );
      process.exit(2);
    }
    if (error instanceof DomainError) {
      console.error(error.message);
      process.exit(1);
    }
    console.error('The command failed:', error);
    process.exit(1);
  },
);
