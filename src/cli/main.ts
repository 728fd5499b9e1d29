import 'reflect-metadata';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConfigError, loadConfig } from '../config/app-config';
import { DataDirectoryBusyError } from '../platform/database/embedded-postgres';
import { DomainError } from '../platform/http/domain-error';
import { CliModule } from './cli.module';
import { COMMANDS, USAGE, UsageError } from './commands';
import { askRunningServer, OperatorAnswer } from './operator-channel';
import { runReadiness } from './readiness-command';

/** Exit codes: 0 done, 1 refused (e.g. not found, already exists), 2 database busy, 64 usage. */
async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === 'help' || name === '--help') {
    console.log(USAGE);
    return name ? 0 : 64;
  }
  // Evaluating a repository needs no database.
  if (name === 'readiness') return runReadiness(args);
  const command = COMMANDS[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${USAGE}`);
    return 64;
  }
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
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

async function viaRunningServer(socketDir: string, command: string, args: string[], busy: DataDirectoryBusyError): Promise<number> {
  let answer: OperatorAnswer;
  try {
    answer = await askRunningServer(socketDir, { command, args });
  } catch {
    throw busy;
  }
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
