import { INestApplicationContext, Logger } from '@nestjs/common';
import { chmod, rm } from 'node:fs/promises';
import { createConnection, createServer, Socket } from 'node:net';
import { join } from 'node:path';
import { DomainError } from '../platform/http/domain-error';
import { COMMANDS, UsageError } from './commands';

/** Beside the embedded database's own socket, in a folder only the server's user may enter. */
export const OPERATOR_SOCKET = 'operator.sock';
/** One command's line of JSON: more is not a command. */
const MAX_REQUEST_BYTES = 64 * 1024;

export interface OperatorRequest {
  command: string;
  args: string[];
}

export type OperatorAnswer = { ok: true; result: unknown } | { ok: false; usage: boolean; message: string };

/**
 * The CLI's way into a running server on the embedded database, which only one process may open:
 * the server runs the operator's commands itself, on a Unix socket (mode 0600) in its data
 * directory's socket folder, so only its own operating-system user reaches it. One command per
 * connection, a line of JSON each way. Returns a function that closes the channel.
 */
export async function openOperatorChannel(app: INestApplicationContext, socketDir: string): Promise<() => Promise<void>> {
  const path = join(socketDir, OPERATOR_SOCKET);
  const logger = new Logger('OperatorChannel');
  await rm(path, { force: true });
  // allowHalfOpen: the CLI ends its side once it has sent the command, and still waits for the answer.
  const server = createServer({ allowHalfOpen: true }, (socket) => serve(app, socket, logger));
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, () => resolve()));
  await chmod(path, 0o600);
  return async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(path, { force: true });
  };
}

function serve(app: INestApplicationContext, socket: Socket, logger: Logger): void {
  let text = '';
  let answered = false;
  socket.setEncoding('utf8');
  socket.on('error', () => undefined);
  socket.on('data', (chunk: string) => {
    text += chunk;
    if (answered || (!text.includes('\n') && text.length <= MAX_REQUEST_BYTES)) return;
    answered = true;
    void run(app, text.split('\n')[0], logger).then((answer) => socket.end(`${JSON.stringify(answer)}\n`));
  });
}

async function run(app: INestApplicationContext, line: string, logger: Logger): Promise<OperatorAnswer> {
  let request: OperatorRequest;
  try {
    request = JSON.parse(line) as OperatorRequest;
    if (typeof request.command !== 'string' || !Array.isArray(request.args) || !request.args.every((arg) => typeof arg === 'string')) throw new Error();
  } catch {
    return { ok: false, usage: true, message: 'Not a command: send {"command": "...", "args": ["..."]} on one line.' };
  }
  const command = Object.hasOwn(COMMANDS, request.command) ? COMMANDS[request.command] : undefined;
  if (!command) return { ok: false, usage: true, message: `Unknown command "${request.command}".` };
  try {
    const result = await command(app, request.args);
    logger.log(`The operator ran ${request.command}`);
    return { ok: true, result };
  } catch (error) {
    if (error instanceof UsageError) return { ok: false, usage: true, message: error.message };
    if (error instanceof DomainError) return { ok: false, usage: false, message: error.message };
    logger.error(`The operator's ${request.command} failed: ${(error as Error).stack ?? String(error)}`);
    return { ok: false, usage: false, message: `The command failed on the server: ${(error as Error).message}` };
  }
}

/** The CLI's side: asks the server that holds the data directory to run the command. */
export function askRunningServer(socketDir: string, request: OperatorRequest, timeoutMs = 60_000): Promise<OperatorAnswer> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(join(socketDir, OPERATOR_SOCKET));
    let text = '';
    socket.setEncoding('utf8');
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`The server did not answer within ${timeoutMs} ms`)));
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      try {
        resolve(JSON.parse(text) as OperatorAnswer);
      } catch {
        reject(new Error("The server's answer was not understood"));
      }
    });
    socket.end(`${JSON.stringify(request)}\n`);
  });
}
