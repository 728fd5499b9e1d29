import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { ApiExceptionFilter } from './platform/http/api-exception.filter';
import { errorBody, errorFlavourOf } from './platform/http/error-body';
import { setupOpenApi } from './platform/http/openapi-document';
import { assignRequestId, REQUEST_ID_HEADER } from './platform/http/request-id';
import { createValidationPipe } from './platform/http/validation';
import { answerClientError, installAccessLog, logUnroutable } from './platform/logging/access-log';
import { credentialIdOf } from './modules/auth';

/** Builds the whole application, ready to listen; shared by main, the demo and the tests. */
export async function createApp(config: AppConfig): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.MESSAGE_BODY_LIMIT_BYTES,
    genReqId: assignRequestId,
    requestIdHeader: false,
    return503OnClosing: true,
    // A request (headers and body) must arrive whole within this; a client trickling it is cut off with a 408.
    // Node reads it when the server is made (setting it later, as Fastify does, has no effect), and looks
    // for such clients every 30 s by default: every second keeps the timeout close to its word.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    http: { requestTimeout: config.REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1_000 },
    clientErrorHandler: answerClientError,
    // Errors Fastify raises before routing (e.g. a malformed percent-escape in the path).
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 400;
      const body = JSON.stringify(errorBody(errorFlavourOf(request.url), status, 'The request URL is malformed.', request.id, { code: 'malformed_url' }));
      void reply.code(status).header(REQUEST_ID_HEADER, request.id).type('application/json; charset=utf-8').send(body);
      logUnroutable(request, status, Buffer.byteLength(body));
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), adapter, {
    bufferLogs: true,
    bodyParser: false,
    abortOnError: false,
  });
  app.useLogger(app.get(Logger));
  app.flushLogs();
  const fastify = app.getHttpAdapter().getInstance();
  // JSON only: Fastify's own application/json parser stays, its text/plain one goes, so any other type is a 415.
  fastify.removeContentTypeParser('text/plain');
  // JSON Merge Patch bodies (RFC 7396) are JSON, parsed with the same guards.
  fastify.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, fastify.getDefaultJsonParser('error', 'error'));
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  installAccessLog(fastify, (request) =>
    request.principal ? { organizationId: request.principal.organizationId, credentialId: credentialIdOf(request.principal) } : {},
  );
  app.useGlobalFilters(new ApiExceptionFilter(config.MESSAGE_BODY_LIMIT_BYTES));
  app.useGlobalPipes(createValidationPipe());
  setupOpenApi(app, config);
  await app.init();
  await fastify.ready();
  return app;
}
