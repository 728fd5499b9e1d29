import type { IncomingMessage } from 'node:http';
import type { Options } from 'pino-http';
import { AppConfig } from '../../config/app-config';

/**
 * Structured JSON logs. The access log (one line per request) is written by `installAccessLog`
 * from Fastify's hooks, not by pino-http. Credentials never reach the logs: the Authorization
 * header and anything named like a secret are redacted.
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
