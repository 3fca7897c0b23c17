import { FastifyOtelInstrumentation } from '@fastify/otel';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { INTERNAL_PATHS } from './contract';
import { describeServerSpan } from './span-attributes';
import { SynchronousContextManager } from './synchronous-context';

/** Probes and scrapes (and the gateways' readiness checks) would drown the traces that matter. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics', INTERNAL_PATHS.readiness]);
/** Asked of every request: an API path (`/v1/…`) is answered without splitting the URL. */
const isUntraced = ({ url }: { url: string }) =>
  !url.startsWith('/v1/') && UNTRACED_PATHS.has(url.split('?', 1)[0]!);

export type TracingSettings =
  | { enabled: false; reason: string }
  | {
      enabled: true;
      exporter: string;
      /** Where OTLP spans go; absent for other exporters. */
      endpoint?: string;
      protocol?: string;
      sampler: string;
      samplerArg?: string;
    };

/**
 * What tracing does under the standard OTEL_* variables. Spans nobody receives would cost for
 * nothing, so with nothing configured there is no tracing; but an OTLP endpoint alone (what the
 * OpenTelemetry Operator injects, or a platform team sets) is configuration enough: it exports
 * over OTLP, the SDK's default exporter. OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true
 * turn it off. Endpoint, protocol and sampler are resolved as the SDK resolves them, for the log.
 */
export function tracingSettings(env: NodeJS.ProcessEnv = process.env): TracingSettings {
  const read = (key: string) => env[key]?.trim() || undefined;
  if (read('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') {
    return { enabled: false, reason: 'OTEL_SDK_DISABLED=true' };
  }
  const tracesEndpoint = read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = read('OTEL_EXPORTER_OTLP_ENDPOINT');
  // Read as the SDK reads it: a list, where "none" first means none, and among others means otlp.
  const listed =
    read('OTEL_TRACES_EXPORTER')
      ?.split(',')
      .map((e) => e.trim()) ?? [];
  let exporters = [...new Set(listed)].filter((e) => e && e !== 'null');
  if (exporters.length === 0 && (tracesEndpoint || baseEndpoint)) exporters = ['otlp'];
  if (exporters.length === 0) {
    return { enabled: false, reason: 'no OTEL_TRACES_EXPORTER and no OTLP endpoint set' };
  }
  if (exporters[0] === 'none') return { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none' };
  if (exporters.includes('none')) exporters = ['otlp'];

  const sampler = read('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  const samplerArg = read('OTEL_TRACES_SAMPLER_ARG');
  const settings = {
    enabled: true as const,
    exporter: exporters.join(','),
    sampler,
    ...(samplerArg && { samplerArg }),
  };
  if (!exporters.includes('otlp')) return settings;

  const protocol =
    read('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ??
    read('OTEL_EXPORTER_OTLP_PROTOCOL') ??
    'http/protobuf';
  const endpoint =
    protocol === 'grpc'
      ? (tracesEndpoint ?? baseEndpoint ?? 'http://localhost:4317')
      : (tracesEndpoint ??
        `${(baseEndpoint ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`);
  return { ...settings, endpoint, protocol };
}

/**
 * Starts OpenTelemetry tracing before the application loads (import it first), when
 * tracingSettings() says so. Everything is configured by the standard OTEL_* variables
 * (exporter, endpoint, protocol, sampler, resource); the service name defaults to the one given.
 * Metrics go to Prometheus, not OTLP. The settings are returned for the service to log.
 *
 * A request makes few spans, each one an SRE reads (docs/observability.md, "Spans per request"):
 * the Fastify request span is the one SERVER span (it continues the caller's traceparent), and
 * at the catalog there is a CLIENT span per call to MongoDB or a webhook receiver (undici). The
 * HTTP instrumentation is left out: its server span duplicated the Fastify one, and binding its
 * context to every request's emitters was the largest single cost of tracing. Hook and handler
 * spans are left out too: they only repeated their parent's timing.
 *
 * `asyncContext: false` (the gateway) keeps the active context only within synchronous code
 * (SynchronousContextManager): no AsyncLocalStorage, so no promise hooks on every request. The
 * gateway makes one span per request, as proxies do: its calls to Redis and to the catalog are
 * attributes of its SERVER span (`tool_directory.quota_ms`, `tool_directory.upstream_ms`), and
 * the catalog call carries the request's traceparent itself, so the catalog's SERVER span is the
 * child of the gateway's. The MongoDB instrumentation is left out there too, since the driver's
 * awaits would lose the context and each key lookup would become a trace of its own.
 */
export function startTelemetry(
  serviceName: string,
  { asyncContext = true }: { asyncContext?: boolean } = {},
): {
  settings: TracingSettings;
  sdk: NodeSDK | undefined;
} {
  const settings = tracingSettings();
  if (!settings.enabled) return { settings, sdk: undefined };
  process.env.OTEL_SERVICE_NAME ||= serviceName;
  process.env.OTEL_METRICS_EXPORTER ||= 'none';
  process.env.OTEL_LOGS_EXPORTER ||= 'none';

  const sdk = new NodeSDK({
    ...(!asyncContext && { contextManager: new SynchronousContextManager() }),
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        instrumentHandler: false,
        ignorePaths: isUntraced,
        requestHook: describeServerSpan,
      }),
      // No Redis spans and, at the gateway, no undici spans: each costs a span and its export
      // where an attribute of the SERVER span tells the same (see above).
      ...(asyncContext ? [new UndiciInstrumentation(), new MongoDBInstrumentation()] : []),
    ],
  });
  sdk.start();
  return { settings, sdk };
}
