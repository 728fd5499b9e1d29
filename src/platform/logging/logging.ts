import type { IncomingMessage } from 'node:http';
import type { DestinationStream } from 'pino';
import type { Options } from 'pino-http';
import pretty from 'pino-pretty';
import type { LoggerService } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';

/**
 * Structured logs: JSON lines for machines, or one readable (and, at a colour terminal, coloured)
 * line per event for people (LOG_FORMAT). The access log (one line per request) is written by
 * `installAccessLog` from Fastify's hooks, not by pino-http. Credentials never reach the logs: the
 * Authorization header and anything named like a secret are redacted.
 */
export function pinoHttpOptions(config: AppConfig): Options {
  return {
    level: config.LOG_LEVEL,
    autoLogging: false,
    genReqId: (req: IncomingMessage) => (req as IncomingMessage & { id?: string }).id ?? 'unknown',
    customAttributeKeys: { reqId: 'requestId' },
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.apiKey', '*.key', '*.password', '*.secret'],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
    },
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
  };
}

/** nestjs-pino's `pinoHttp`: the options, with the readable stream when the format is pretty. */
export function pinoHttpSetting(config: AppConfig): Options | [Options, DestinationStream] {
  const options = pinoHttpOptions(config);
  return config.logFormat === 'pretty' ? [options, prettyStream(colorsWanted())] : options;
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
