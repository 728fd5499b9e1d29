import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DatabaseUnavailableError, isDatabaseUnavailable, isStorageFull, StorageFullError } from '../database/database-unavailable';
import { DomainError, statusOf } from './domain-error';
import { errorBody, errorFlavourOf } from './error-body';
import { ServerDetails } from './server-details';

interface Described {
  status: number;
  detail: string;
  metadata?: Record<string, unknown>;
}

/**
 * The single place where failures become HTTP responses: the spec's error bodies, the right
 * status, never a stack trace, and never the server's folders or host name (a message that names
 * them is answered without them and logged whole with the request id). A database that does not
 * answer is a 503 with `Retry-After` (a client retries it), logged as a warning; its disk full is a 503 too
 * (`storage_full`), logged at error level for the operator; other unexpected
 * errors answer 500 and are logged at error level with the request id.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  /**
   * `defaultBodyLimitBytes`: the limit of requests that matched no route (each route has its own).
   * `allowedMethods`: the methods a path has, to answer 405 rather than 404 on a known path.
   */
  constructor(
    private readonly defaultBodyLimitBytes: number,
    private readonly details: ServerDetails,
    private readonly allowedMethods: (path: string) => string[] = () => [],
  ) {}

  catch(thrown: unknown, host: ArgumentsHost): void {
    const exception = databaseTrouble(thrown) ?? thrown;
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const described = this.describe(exception, request);
    const detail = this.details.redact(described.detail);
    const metadata = this.details.redactDeep(described.metadata);
    const { status } = described;
    if (detail !== described.detail || JSON.stringify(metadata) !== JSON.stringify(described.metadata)) {
      this.logger.warn({ requestId: request.id, detail: described.detail, metadata: described.metadata }, 'Server details taken out of an error answer');
    }
    if (exception instanceof StorageFullError) {
      // The operator has to act (free space, grow the disk): an error line, though the answer is one the API describes.
      this.logger.error(
        { requestId: request.id, method: request.method, url: request.url, code: exception.code, cause: (thrown as Error).message },
        'The database has no disk space left: writes are refused (503 storage_full) until space is freed; reads go on',
      );
    } else if (status >= 500 && exception instanceof DomainError) {
      // An answer the API describes (a database or a vendor not answering): the operator's concern, not a defect.
      const cause = thrown === exception ? undefined : (thrown as Error).message;
      this.logger.warn({ requestId: request.id, method: request.method, url: request.url, code: exception.code, cause }, exception.message);
    } else if (status >= 500) {
      this.logger.error({ err: exception, requestId: request.id, method: request.method, url: request.url }, 'Unexpected error');
    }
    if (status === 405 && metadata?.allowed) void reply.header('allow', (metadata.allowed as string[]).join(', '));
    if (exception instanceof DomainError && exception.retryAfterSeconds !== undefined) {
      void reply.header('retry-after', String(exception.retryAfterSeconds));
    }
    reply
      .status(status)
      .header('content-type', 'application/json; charset=utf-8')
      .send(errorBody(errorFlavourOf(request.url), status, detail, String(request.id), metadata));
  }

  private describe(exception: unknown, request: FastifyRequest): Described {
    if (exception instanceof DomainError) {
      return {
        status: statusOf(exception.kind),
        detail: exception.message,
        metadata: { code: exception.code, ...exception.metadata },
      };
    }
    if (exception instanceof HttpException) return this.describeHttp(exception, request);
    return {
      status: 500,
      detail: `An unexpected error occurred. Quote request id ${String(request.id)} when reporting it.`,
      metadata: { code: 'internal_error' },
    };
  }

  /** Exceptions raised by Nest or Fastify themselves: routing, body parsing, size limits. */
  private describeHttp(exception: HttpException, request: FastifyRequest): Described {
    const status = exception.getStatus();
    switch (status) {
      // An unsupported method on a known path is a 405 (refused at the edge, or found here).
      case 404:
      case 405: {
        const path = request.url.split('?')[0];
        const allowed = this.allowedMethods(path);
        if (allowed.length > 0 && !allowed.includes(request.method)) {
          return {
            status: 405,
            detail: `${request.method} is not allowed on ${path}; it answers ${allowed.join(', ')}.`,
            metadata: { code: 'method_not_allowed', allowed },
          };
        }
        return {
          status: 404,
          detail: `No route matches ${request.method} ${request.url.split('?')[0]}.`,
          metadata: { code: 'route_not_found' },
        };
      }
      case 413: {
        const limitBytes = request.routeOptions?.bodyLimit ?? this.defaultBodyLimitBytes;
        return {
          status,
          detail: `The request body is larger than this operation's limit of ${limitBytes} bytes.`,
          metadata: { code: 'payload_too_large', limitBytes },
        };
      }
      case 415:
        return {
          status,
          detail: 'Request bodies must be JSON: send Content-Type: application/json.',
          metadata: { code: 'unsupported_media_type' },
        };
    }
    if (status === 400 && isBodyParseError(exception)) {
      return { status, detail: 'The request body is not valid JSON.', metadata: { code: 'invalid_json' } };
    }
    if (status >= 500) {
      return {
        status,
        detail: `An unexpected error occurred. Quote request id ${String(request.id)} when reporting it.`,
        metadata: { code: 'internal_error' },
      };
    }
    return { status, detail: messageOf(exception), metadata: { code: codeOf(exception) } };
  }
}

function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}

function codeOf(exception: HttpException): string {
  return exception.name
    .replace(/Exception$/, '')
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

function isBodyParseError(exception: HttpException): boolean {
  const cause = exception.cause as { code?: string; name?: string } | undefined;
  return cause?.name === 'SyntaxError' || (cause?.code?.startsWith('FST_ERR_CTP') ?? false) || /JSON|body/i.test(exception.message);
}

/** What a database failure means to the client: it did not answer, or its disk is full; else undefined. */
function databaseTrouble(thrown: unknown): DomainError | undefined {
  if (thrown instanceof DomainError) return undefined;
  if (isStorageFull(thrown)) return new StorageFullError();
  return isDatabaseUnavailable(thrown) ? new DatabaseUnavailableError() : undefined;
}
