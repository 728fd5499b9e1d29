import pino, { type DestinationStream, type Level, type Logger as Pino } from 'pino';
import pretty from 'pino-pretty';
import type { LoggerService } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { currentRequest } from '../http/request-context';

/**
 * Structured logs: JSON lines for machines, or one readable (and, at a colour terminal, coloured)
 * line per event for people (LOG_FORMAT). Lines written while a request is served carry its
 * `requestId`. Credentials never reach the logs: anything named like a secret is redacted.
 */
export function createPino(config: AppConfig, destination?: DestinationStream): Pino {
  return pino(
    {
      level: config.LOG_LEVEL,
      redact: { paths: ['*.apiKey', '*.key', '*.password', '*.secret', '*.authorization', '*.token'], censor: '[redacted]' },
      mixin: () => {
        const request = currentRequest();
        return request ? { requestId: request.requestId } : {};
      },
    },
    destination ?? (config.logFormat === 'pretty' ? prettyStream(colorsWanted()) : pino.destination({ sync: true })),
  );
}

const STACK = /\n\s+at /;

/**
 * Nest's logger interface over pino. Nest passes `(message, ...params, context)`; a message may be
 * an object of fields (then the next parameter is the text) or an Error; `error` may get a stack.
 */
export class PinoLogger implements LoggerService {
  constructor(private readonly pino: Pino) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const rest = [...params];
    // Nest appends the logger's context last; a message object is followed by its text.
    const context = rest.length > (isFields(message) ? 1 : 0) && typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const fields: Record<string, unknown> = context ? { context } : {};
    let text: string;
    if (message instanceof Error) {
      fields.err = message;
      text = typeof rest[0] === 'string' && !STACK.test(rest[0]) ? (rest.shift() as string) : message.message;
    } else if (isFields(message)) {
      Object.assign(fields, message);
      text = typeof rest[0] === 'string' ? (rest.shift() as string) : '';
    } else {
      text = String(message);
    }
    // Nest's own `error(message, stack)`.
    const stack = rest.find((param): param is string => typeof param === 'string' && STACK.test(param));
    if (stack && !fields.err) fields.err = { message: text, stack };
    this.pino[level](fields, text);
  }
}

function isFields(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !(value instanceof Error);
}

/**
 * Colours follow the usual conventions: NO_COLOR turns them off, FORCE_COLOR (not 0) on, and
 * otherwise they are on when stdout is a terminal.
 */
export function colorsWanted(env: NodeJS.ProcessEnv = process.env, stdout: { isTTY?: boolean } = process.stdout): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  return stdout.isTTY === true;
}

/** Fields every line has, or that the pretty line shows in its own place. */
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'context', 'msg', 'err', 'req', 'res', 'responseTime']);
/** Fields of an access line its message already says (see access-log.ts). */
const ACCESS_SHOWN = new Set(['requestId', 'method', 'route', 'status', 'durationMs']);

/**
 * `12:03:04.567 INFO  [Access] GET /api/v0/sessions/:sessionId 200 3.1 ms req 1f2e…`: the time,
 * the level, where it comes from, the message, then the rest as `key=value` (ids and numbers; the
 * JSON logs carry the same fields). Written synchronously so nothing is lost at exit.
 */
export function prettyStream(colorize: boolean, destination: number | NodeJS.WritableStream = 1): DestinationStream {
  return pretty({
    colorize,
    destination,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    // The fields are in the message (below); errors still come with their stack.
    hideObject: true,
    customColors: 'message:reset',
    useOnlyCustomProps: false,
    messageFormat: (log, messageKey, _levelLabel, { colors }) => {
      const context = typeof log.context === 'string' ? `${colors.cyan(`[${log.context}]`)} ` : '';
      const skip = log.context === 'Access' ? ACCESS_SHOWN : new Set<string>();
      const rest = Object.entries(log)
        .filter(([key, value]) => !SHOWN.has(key) && !skip.has(key) && value !== undefined && value !== null)
        .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
      return `${context}${String(log[messageKey] ?? '')}${rest.length > 0 ? ` ${colors.gray(rest.join(' '))}` : ''}`;
    },
  });
}

/** Nest's own start-up chatter: a line per module and per route. The operator needs none of it. */
const QUIET_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/** The application's logger without Nest's start-up lines at info (its warnings and errors still pass). */
export class QuietStartLogger implements LoggerService {
  constructor(private readonly inner: LoggerService) {}

  log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams[optionalParams.length - 1];
    if (typeof context === 'string' && QUIET_CONTEXTS.has(context)) return;
    this.inner.log(message, ...optionalParams);
  }

  error(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.error(message, ...optionalParams);
  }

  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.warn(message, ...optionalParams);
  }

  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.debug?.(message, ...optionalParams);
  }

  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.verbose?.(message, ...optionalParams);
  }

  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.fatal?.(message, ...optionalParams);
  }
}
