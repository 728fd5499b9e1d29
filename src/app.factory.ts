import { MethodNotAllowedException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { maxHeaderSize } from 'node:http';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { credentialIdOf, RequestAuthentication, RequestIdentity } from './modules/auth';
import { AllowedMethods } from './platform/http/allowed-methods';
import { installCompression } from './platform/http/compression';
import { ApiExceptionFilter } from './platform/http/api-exception.filter';
import { errorBody, errorFlavourOf } from './platform/http/error-body';
import { docsArePublic, setupOpenApi } from './platform/http/openapi-document';
import { installLargeAnswers } from './platform/http/large-answers';
import { installRequestBodies } from './platform/http/request-bodies';
import { installRequestContext } from './platform/http/request-context';
import { PathIdGuard } from './platform/http/path-ids';
import { edgeConfigOf } from './platform/http/route-config';
import { installHttpMetrics, Metrics } from './platform/metrics';
import { assignRequestId, REQUEST_ID_HEADER } from './platform/http/request-id';
import { ALWAYS, installSecurityHeaders } from './platform/http/security-headers';
import { ServerDetails } from './platform/http/server-details';
import { WebConsole } from './platform/http/web-console';
import { NoUndeclaredQueryGuard } from './platform/http/validation';
import { answerClientError, installAccessLog, logUnroutable } from './platform/logging/access-log';
import { createPino, PinoLogger, QuietStartLogger } from './platform/logging/logging';
import { RateLimits, RateLimitSubject } from './platform/rate-limit';
import { Draining, shuttingDown } from './modules/health/draining';

/** Builds the whole application, ready to listen; shared by main, the demo and the tests. */
export async function createApp(config: AppConfig): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    // The default for routes; each route sets its own (installRequestBodies).
    bodyLimit: config.BODY_LIMIT_BYTES,
    genReqId: assignRequestId,
    requestIdHeader: false,
    // Requests arriving while the server closes are answered by the hook below, in the API's error body.
    return503OnClosing: false,
    trustProxy: config.trustProxy,
    // A request (headers and body) must arrive whole within this; a client trickling it is cut off with a 408.
    // Node reads it when the server is made (setting it later, as Fastify does, has no effect), and looks
    // for such clients every 30 s by default: every second keeps the timeout close to its word.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    http: { requestTimeout: config.REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1_000 },
    clientErrorHandler: answerClientError,
    // An id of any length Node lets through (its request line and headers fit in maxHeaderSize) reaches its route, which
    // answers its own 404 for an id that names nothing, rather than the router a 414 (FST_ERR_MAX_PARAM_LENGTH) at 100.
    routerOptions: { maxParamLength: maxHeaderSize },
    // Errors Fastify raises before routing (e.g. a malformed percent-escape in the path).
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 400;
      const body = JSON.stringify(errorBody(errorFlavourOf(request.url), status, 'The request URL is malformed.', request.id, { code: 'malformed_url' }));
      // Before routing: the onSend hook that sets these does not run for this answer.
      void reply.code(status).header(REQUEST_ID_HEADER, request.id).headers(ALWAYS).type('application/json; charset=utf-8').send(body);
      logUnroutable(request, status, Buffer.byteLength(body));
    },
  });
  // First, so that every hook and handler of a request logs with its id.
  installRequestContext(adapter.getInstance());
  // Hooks on routes must exist before Nest and Swagger add the routes.
  installRequestBodies(adapter.getInstance(), config);
  installLargeAnswers(adapter.getInstance());
  await installCompression(adapter.getInstance());
  docsArePublic(adapter.getInstance());
  const allowedMethods = AllowedMethods.install(adapter.getInstance());
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), adapter, {
    bufferLogs: true,
    bodyParser: false,
    abortOnError: false,
  });
  app.useLogger(new QuietStartLogger(new PinoLogger(createPino(config))));
  app.flushLogs();
  const fastify = app.getHttpAdapter().getInstance();
  const authentication = app.get(RequestAuthentication);
  const rateLimits = app.get(RateLimits);
  installSecurityHeaders(fastify, config);
  // First, so that requests refused at the edge are logged too.
  installAccessLog(fastify, config.LOG_LEVEL, (request) =>
    request.principal
      ? { organizationId: request.principal.organizationId, credentialId: credentialIdOf(request.principal) }
      : request.sessionWorker
        ? { organizationId: request.sessionWorker.organizationId, credentialId: `worker:${request.sessionWorker.workerId}` }
        : {},
  );
  installHttpMetrics(fastify, app.get(Metrics));
  // Once the instance stops listening, a request still arriving on an open connection: 503, and the connection closed.
  const draining = app.get(Draining);
  fastify.addHook('onRequest', (request, reply, done) => {
    if (!draining.closed) return done();
    reply.header(REQUEST_ID_HEADER, request.id).header('connection', 'close');
    done(shuttingDown());
  });
  // The web console: a browser navigation gets its index.html before any credential is asked for.
  WebConsole.load(config)?.install(fastify);
  // A known path asked with another method: 405 before its body is read (a bad body would answer 400 or 415).
  fastify.addHook('onRequest', (request, reply, done) => {
    if (!request.is404) return done();
    const allowed = allowedMethods.of(request.url.split('?')[0]);
    if (allowed.length === 0 || allowed.includes(request.method)) return done();
    reply.header(REQUEST_ID_HEADER, request.id);
    if (hasBody(request)) reply.header('connection', 'close');
    done(new MethodNotAllowedException());
  });
  // The request edge: credential, then rate limits, before any of the body is read. A callback hook: the credential is
  // usually known without I/O, and an async hook would cost promises on every request.
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    const refuse = (error: unknown) => {
      // Refused with a body still to come: close the connection rather than read and discard it.
      if (hasBody(request)) reply.header('connection', 'close');
      done(error as Error);
    };
    const admit = (identity: RequestIdentity) => {
      const own = identity.kind === 'principal' && edgeConfigOf(request).ownRateLimit === true;
      rateLimits
        .admit(request, reply, own ? { kind: 'exempt' } : subjectOf(identity))
        .then(() => (identity.kind === 'refused' ? refuse(identity.refusal) : done()), refuse);
    };
    let identity: RequestIdentity | Promise<RequestIdentity>;
    try {
      identity = authentication.identify(request);
    } catch (error) {
      return refuse(error);
    }
    if (identity instanceof Promise) identity.then(admit, refuse);
    else admit(identity);
  });
  app.useGlobalFilters(new ApiExceptionFilter(config.BODY_LIMIT_BYTES, new ServerDetails(config), (path) => allowedMethods.of(path)));
  // After the AuthGuard (an APP_GUARD, registered when the app was created): 401 and 403 come before a 404 for an id
  // no row can have, or a 400 for the query.
  app.useGlobalGuards(new PathIdGuard(), new NoUndeclaredQueryGuard());
  setupOpenApi(app, config);
  await app.init();
  await fastify.ready();
  return app;
}

function subjectOf(identity: RequestIdentity): RateLimitSubject {
  switch (identity.kind) {
    case 'principal':
      return {
        kind: 'credential',
        credentialId: identity.credentialId,
        organizationId: identity.principal.organizationId,
        userId: identity.principal.userId,
      };
    case 'worker':
      return { kind: 'worker', workerId: identity.workerId, organizationId: identity.organizationId };
    case 'public':
      return identity.probe ? { kind: 'exempt' } : { kind: 'anonymous' };
    case 'refused':
      return { kind: 'anonymous' };
  }
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
