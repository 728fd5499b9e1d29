import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppConfig } from '../../config/app-config';
import { RequestError, RequestErrorCode } from './domain-error';
import { jsonLimitBroken } from './json-limits';
import { EdgeRouteConfig } from './route-config';

/**
 * How request bodies are read: JSON only (Fastify's own parser, with its prototype-poisoning
 * guards), application/merge-patch+json alike, nesting bounded by JSON_MAX_DEPTH and values by JSON_MAX_VALUES
 * (checked by one scan before parsing, so parsing never costs more than that many values), and each
 * route's size limit: MESSAGE_BODY_LIMIT_BYTES where messages are added, BODY_LIMIT_BYTES elsewhere.
 * Must be installed before the routes are (before NestFactory.create).
 */
export function installRequestBodies(fastify: FastifyInstance, config: AppConfig): void {
  fastify.addHook('onRoute', (route) => {
    const edge = (route.config ?? {}) as EdgeRouteConfig;
    route.bodyLimit = edge.messageBody ? config.MESSAGE_BODY_LIMIT_BYTES : config.BODY_LIMIT_BYTES;
  });
  const parse = fastify.getDefaultJsonParser('error', 'error');
  const parseBounded = (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    const broken = jsonLimitBroken(text, config.JSON_MAX_DEPTH, config.JSON_MAX_VALUES);
    if (broken === 'depth') {
      done(
        new RequestError(RequestErrorCode.JsonTooDeep, `The request body nests arrays and objects deeper than the limit of ${config.JSON_MAX_DEPTH} levels.`, {
          maxDepth: config.JSON_MAX_DEPTH,
        }),
      );
      return;
    }
    if (broken === 'values') {
      done(
        new RequestError(
          RequestErrorCode.JsonTooManyValues,
          `The request body holds more than ${config.JSON_MAX_VALUES} values (array items and object members, at every level, counted together).`,
          { maxValues: config.JSON_MAX_VALUES },
        ),
      );
      return;
    }
    void parse(request, text, done);
  };
  // Only JSON: Fastify's text/plain parser goes, so any other type is a 415.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, parseBounded);
  // JSON Merge Patch bodies (RFC 7396) are JSON, parsed with the same guards.
  fastify.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, parseBounded);
}
