/** The routes whose spans would be noise: probes and the metrics scrape, every few seconds. */
const UNTRACED = /^\/(healthz|livez|metrics)(\?|$)/;

/** Whether the environment asks for traces: an OTLP endpoint is set, and the SDK is not turned off. */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export interface Tracing {
  /** Sends the spans still buffered and stops: call last, after the application has closed. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces, exported by OTLP over HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is
 * set: a span per request (the HTTP server's, and Fastify's under it named by the route's pattern), one per database
 * query and one per background job run. Unset, nothing here is loaded: the SDK and its instrumentations cost nothing.
 * The SDK reads the rest of the standard variables itself (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`,
 * `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`...). Must run before `http`, `pg` and `fastify` are first required.
 *
 * What a span may say is what the access log may say: the path, never the query string (cursors, emails); a query's
 * statement, never its parameters; no header. Requests the server makes to addresses users chose (webhooks, model
 * relay) get no spans, so their URLs and query strings do not travel to the collector either.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): Tracing | null {
  if (!tracingWanted(env)) return null;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when traces are wanted */
  const { NodeTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { registerInstrumentations } = require('@opentelemetry/instrumentation') as typeof import('@opentelemetry/instrumentation');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { FastifyOtelInstrumentation } = require('@fastify/otel') as typeof import('@fastify/otel');
  /* eslint-enable @typescript-eslint/no-require-imports */

  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'agent-platform' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  const pathOnly = (url: string) => url.split('?')[0];
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED.test(request.url ?? ''),
        disableOutgoingRequestInstrumentation: true,
        // The query string is recorded before this runs: blank it.
        requestHook: (span) => span.setAttribute('url.query', ''),
      }),
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        // A client's error (a 4xx) is not the server's: the span's status says it, without a stack trace.
        recordExceptions: false,
        ignorePaths: ({ url }) => UNTRACED.test(url),
        // Its `url.path` is the raw URL, query string included: the path alone instead.
        requestHook: (span, request) => span.setAttribute('url.path', pathOnly(request.url)),
      }),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
    ],
  });
  return { shutdown: () => provider.shutdown() };
}
