import { FastifyOtelInstrumentation } from '@fastify/otel';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';

/** Probes and scrapes would drown the traces that matter. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Tracing runs only when an exporter is named: spans nobody receives would cost for nothing. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  return Boolean(exporter) && exporter !== 'none' && env.OTEL_SDK_DISABLED !== 'true';
}

/**
 * Starts OpenTelemetry tracing before the application loads (import it first). Everything is
 * configured by the standard OTEL_* variables (exporter, endpoint, protocol, sampler,
 * resource); two defaults differ from the SDK's: the service name, and no tracing at all unless
 * OTEL_TRACES_EXPORTER names an exporter. Metrics go to Prometheus, not OTLP.
 */
export function startTelemetry(serviceName: string): NodeSDK | undefined {
  if (!tracingConfigured()) return undefined;
  process.env.OTEL_SERVICE_NAME ||= serviceName;
  process.env.OTEL_METRICS_EXPORTER ||= 'none';
  process.env.OTEL_LOGS_EXPORTER ||= 'none';

  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has(req.url?.split('?')[0] ?? ''),
      }),
      new UndiciInstrumentation(),
      new IORedisInstrumentation(),
      new MongoDBInstrumentation(),
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // A span per hook would cost more than it tells; the key check is the one worth seeing.
        instrumentHooks: ['preHandler'],
        ignorePaths: (route) => UNTRACED_PATHS.has(route.url),
      }),
    ],
  });
  sdk.start();
  return sdk;
}
