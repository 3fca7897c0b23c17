import { type TracingSettings, tracingSettings } from '../../services/shared/telemetry';
import { startOtlpReceiver } from '../support/otlp-receiver';
import { waitFor } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import { registerKey, startStack } from '../support/services';

const SPAN_KIND_SERVER = 2;
const SPAN_STATUS_ERROR = 2;
const KIND_NAMES: Record<number, string> = { 1: 'internal', 2: 'server', 3: 'client' };
const GATEWAY = 'tool-directory-gateway';
const CATALOG = 'tool-directory-catalog';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PROBE_TRACE_ID = '1bf8762a27de54ee9559fc322d91420d';
const PARENT_SPAN_ID = 'b7ad6b7169203331';
/** How long the services' span batches wait before they are sent (OTEL_BSP_SCHEDULE_DELAY). */
const EXPORT_DELAY_MS = 100;
/**
 * How long a test waits for a span that must not come: ten export delays. Longer would make it
 * surer and every run slower; a span the services should not make comes with the same batch as
 * the one awaited before, or the next.
 */
const NOTHING_MORE_MS = 10 * EXPORT_DELAY_MS;

function otelEnv(endpoint: string, protocol: string) {
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS),
  };
}

/** Every span of a trace, once one has come and a duplicate, had one been made, would have too. */
async function spansOfTrace(
  receiver: Awaited<ReturnType<typeof startOtlpReceiver>>,
  traceId: string,
) {
  await waitFor(
    async () => (receiver.spans.some((s) => s.traceId === traceId) ? true : undefined),
    { what: `a span of trace ${traceId}` },
  );
  await new Promise((r) => setTimeout(r, NOTHING_MORE_MS));
  return receiver.spans.filter((s) => s.traceId === traceId);
}

/** The gateway's one SERVER span of `GET /v1/tools/:slug`, continuing the client's trace. */
function gatewayToolSpan(attributes: Record<string, unknown>) {
  return expect.objectContaining({
    service: GATEWAY,
    kind: SPAN_KIND_SERVER,
    name: 'GET /v1/tools/:slug',
    parentSpanId: PARENT_SPAN_ID,
    attributes: expect.objectContaining({ 'http.route': '/v1/tools/:slug', ...attributes }),
  });
}

/**
 * The JSON log line with this message, once it is there: info lines are handed over in batches
 * (up to LOG_FLUSH_MS after the first), so a line of the start may come after the first spans.
 */
function logLine(output: string[], msg: string): Promise<Record<string, unknown>> {
  return waitFor(
    async () => {
      const line = output.find((l) => l.includes(`"msg":"${msg}"`));
      return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
    },
    { what: `the log line "${msg}"` },
  );
}

/**
 * docs/api.md#health-request-ids-and-tracing: one client request is one trace across gateway and
 * catalog.
 */
describe('one trace from the gateway to the catalog (OTLP/HTTP JSON)', () => {
  test('continues the given traceparent with one server span per service, the catalog one a child of the gateway one', async () => {
    const receiver = await startOtlpReceiver();
    const redis = await RedisServer.start();
    const env = otelEnv(receiver.endpoint, 'http/json');
    const stack = await startStack({ ...env, REDIS_URL: redis.url }, env);
    try {
      const key = await registerKey(stack.gateway.url);
      // Probes are not traced: this one's trace must never arrive.
      await fetch(`${stack.gateway.url}/healthz`, {
        headers: { traceparent: `00-${PROBE_TRACE_ID}-${PARENT_SPAN_ID}-01` },
      });
      const response = await fetch(`${stack.gateway.url}/v1/tools/langchain`, {
        headers: { 'x-api-key': key, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
      });
      expect(response.status).toBe(200);
      const requestId = response.headers.get('x-request-id');

      const inTrace = () => receiver.spans.filter((s) => s.traceId === TRACE_ID);
      const of = (service: string) => inTrace().filter((s) => s.service === service);
      await waitFor(
        async () => (of(GATEWAY).length >= 1 && of(CATALOG).length >= 1 ? true : undefined),
        { what: 'the spans of both services' },
      );
      // A duplicate span, had one been made, would have come too.
      await new Promise((r) => setTimeout(r, NOTHING_MORE_MS));

      // The span set an SRE reads, and nothing more (no duplicate HTTP or hook spans, and no
      // gateway CLIENT span: the catalog call is timed on the gateway's SERVER span).
      const summary = (service: string) =>
        of(service)
          .map((s) => `${KIND_NAMES[s.kind]} ${s.name}`)
          .sort();
      expect(summary(GATEWAY)).toEqual(['server GET /v1/tools/:slug']);
      expect(summary(CATALOG)).toEqual(['server GET /v1/tools/:slug']);

      const gatewayServer = of(GATEWAY)[0]!;
      const catalogServer = of(CATALOG)[0]!;
      expect(gatewayServer.parentSpanId).toBe(PARENT_SPAN_ID);
      expect(catalogServer.parentSpanId).toBe(gatewayServer.spanId);

      for (const server of [gatewayServer, catalogServer]) {
        expect(server.attributes).toMatchObject({
          'http.route': '/v1/tools/:slug',
          'http.response.status_code': 200,
          'tool_directory.tier': 'free',
          'tool_directory.request_id': requestId,
        });
      }
      // The calls to Redis (the quota) and to the catalog are timed on the gateway's server span.
      expect(gatewayServer.attributes['tool_directory.quota_ms']).toEqual(expect.any(Number));
      expect(gatewayServer.attributes['tool_directory.upstream_ms']).toEqual(expect.any(Number));
      expect(receiver.spans.some((s) => s.traceId === PROBE_TRACE_ID)).toBe(false);

      const everything = JSON.stringify(receiver.spans);
      expect(everything).not.toContain(key);
      expect(everything).not.toContain(key.slice(4, 20));

      // Logs carry the same trace, and never the key.
      const rawRequestLine = await waitFor(
        async () =>
          stack.gateway.output.find((l) => l.includes(TRACE_ID) && l.includes('request completed')),
        { what: 'the gateway access line of the request, with the trace id' },
      );
      const requestLine = JSON.parse(rawRequestLine) as Record<string, unknown>;
      // Bound once: JSON.parse would hide a second, different trace_id.
      expect(rawRequestLine.match(/"trace_id"/g)).toHaveLength(1);
      expect(requestLine).toMatchObject({
        trace_id: TRACE_ID,
        span_id: gatewayServer.spanId,
        reqId: requestId,
        route: '/v1/tools/:slug',
        status: 200,
        tier: 'free',
      });
      expect(typeof requestLine.durationMs).toBe('number');
      // The catalog's line comes through its own batched log and pipe: it may come later.
      const catalogLine = await waitFor(
        async () =>
          stack.catalog.output.find((l) => l.includes(TRACE_ID) && l.includes('request completed')),
        { what: 'the catalog log line of the request, with the trace id' },
      );
      expect(catalogLine.match(/"trace_id"/g)).toHaveLength(1);
      expect([...stack.gateway.output, ...stack.catalog.output].join('\n')).not.toContain(key);
    } finally {
      await stack.stop();
      await redis.stop();
      await receiver.close();
    }
  });

  test('a request refused at the gateway is one server span with its route and status, and no call', async () => {
    const receiver = await startOtlpReceiver();
    const env = otelEnv(receiver.endpoint, 'http/json');
    const stack = await startStack(env, env);
    try {
      const response = await fetch(`${stack.gateway.url}/v1/tools/langchain`, {
        headers: {
          'x-api-key': 'td_not_a_key',
          traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`,
        },
      });
      expect(response.status).toBe(401);
      const spans = await spansOfTrace(receiver, TRACE_ID);
      expect(spans).toEqual([
        gatewayToolSpan({
          'http.response.status_code': 401,
          'tool_directory.request_id': response.headers.get('x-request-id'),
        }),
      ]);
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });
  test('a cache hit answered before Fastify has the SERVER span and the log ids Fastify’s would', async () => {
    const receiver = await startOtlpReceiver();
    const env = otelEnv(receiver.endpoint, 'http/json');
    const stack = await startStack({ ...env, LOG_LEVEL: 'info' }, env);
    try {
      const key = await registerKey(stack.gateway.url);
      const read = (traceId: string) =>
        fetch(`${stack.gateway.url}/v1/tools/langchain`, {
          headers: { 'x-api-key': key, traceparent: `00-${traceId}-${PARENT_SPAN_ID}-01` },
        });
      // Relayed, then kept: the third read is a hit, answered by the cached-answer path.
      await read(PROBE_TRACE_ID);
      await read(PROBE_TRACE_ID);
      const hit = await read(TRACE_ID);
      expect(hit.headers.get('x-cache')).toBe('HIT');
      const requestId = hit.headers.get('x-request-id');
      const spans = await spansOfTrace(receiver, TRACE_ID);
      expect(spans).toEqual([
        gatewayToolSpan({
          'http.request.method': 'GET',
          'url.path': '/v1/tools/langchain',
          'http.response.status_code': 200,
          'tool_directory.tier': 'free',
          'tool_directory.request_id': requestId,
          'tool_directory.quota_ms': expect.any(Number),
        }),
      ]);
      const line = await waitFor(
        async () => stack.gateway.output.find((l) => l.includes(`"reqId":"${requestId}"`)),
        { what: 'the access line of the hit' },
      );
      expect(JSON.parse(line)).toMatchObject({
        msg: 'request completed',
        route: '/v1/tools/:slug',
        status: 200,
        trace_id: TRACE_ID,
        span_id: spans[0]!.spanId,
      });
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });
  test('a catalog call that fails is timed on the gateway span, which ends in error', async () => {
    const receiver = await startOtlpReceiver();
    const env = otelEnv(receiver.endpoint, 'http/json');
    const stack = await startStack(env, env);
    try {
      const key = await registerKey(stack.gateway.url);
      await stack.catalog.stop();
      const response = await fetch(`${stack.gateway.url}/v1/tools/langchain`, {
        headers: { 'x-api-key': key, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
      });
      expect(response.status).toBe(503);
      await waitFor(
        async () => (receiver.spans.some((s) => s.traceId === TRACE_ID) ? true : undefined),
        { what: 'the gateway span' },
      );
      const [span] = receiver.spans.filter((s) => s.traceId === TRACE_ID);
      expect(span).toMatchObject({
        service: GATEWAY,
        kind: SPAN_KIND_SERVER,
        statusCode: SPAN_STATUS_ERROR,
        attributes: expect.objectContaining({
          'http.response.status_code': 503,
          'tool_directory.upstream_ms': expect.any(Number),
        }),
      });
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });
});

/**
 * Tracing follows the OpenTelemetry conventions, so that a platform's way of turning it on (the
 * OpenTelemetry Operator injects OTEL_EXPORTER_OTLP_ENDPOINT, nothing else) works, and its ways
 * of turning it off too. Every process says at start what tracing does.
 */
describe('configured by the OpenTelemetry conventions', () => {
  const fast = { OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS) };

  test('an OTLP endpoint alone exports, in OTLP/HTTP protobuf (the default): one trace across both services', async () => {
    const receiver = await startOtlpReceiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...fast };
    const stack = await startStack(env, env);
    try {
      const key = await registerKey(stack.gateway.url);
      await fetch(`${stack.gateway.url}/v1/categories`, {
        headers: { 'x-api-key': key, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
      });
      const traceIdBytes = Buffer.from(TRACE_ID, 'hex');
      const exportedBy = (service: string) =>
        receiver.protobufBodies.some((b) => b.includes(traceIdBytes) && b.includes(service));
      await waitFor(
        async () =>
          exportedBy('tool-directory-gateway') && exportedBy('tool-directory-catalog')
            ? true
            : undefined,
        { what: 'the trace from both services' },
      );
      for (const service of [stack.gateway, stack.catalog]) {
        expect(await logLine(service.output, 'tracing on')).toMatchObject({
          tracing: {
            exporter: 'otlp',
            endpoint: `${receiver.endpoint}/v1/traces`,
            protocol: 'http/protobuf',
            sampler: 'parentbased_always_on',
          },
        });
      }
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });

  test('OTEL_SDK_DISABLED=true sends nothing, whatever else is set', async () => {
    const receiver = await startOtlpReceiver();
    const env = {
      OTEL_SDK_DISABLED: 'true',
      ...otelEnv(receiver.endpoint, 'http/json'),
    };
    const stack = await startStack(env, env);
    try {
      const key = await registerKey(stack.gateway.url);
      const response = await fetch(`${stack.gateway.url}/v1/categories`, {
        headers: { 'x-api-key': key },
      });
      expect(response.status).toBe(200);
      // Nothing awaited first here: twice as long, for a span, had one been made, to be sent.
      await new Promise((r) => setTimeout(r, 2 * NOTHING_MORE_MS));
      expect(receiver.spans).toEqual([]);
      expect(receiver.protobufBodies).toEqual([]);
      expect(await logLine(stack.gateway.output, 'tracing off')).toMatchObject({
        tracing: { enabled: false, reason: 'OTEL_SDK_DISABLED=true' },
      });
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });

  test.each<[string, Record<string, string>, TracingSettings]>([
    [
      'nothing configured: no tracing',
      {},
      { enabled: false, reason: 'no OTEL_TRACES_EXPORTER and no OTLP endpoint set' },
    ],
    [
      'the traces endpoint alone, used as given',
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom/traces' },
      {
        enabled: true,
        exporter: 'otlp',
        endpoint: 'http://collector:4318/custom/traces',
        protocol: 'http/protobuf',
        sampler: 'parentbased_always_on',
      },
    ],
    [
      'the base endpoint, with the signal path appended',
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
      },
      {
        enabled: true,
        exporter: 'otlp',
        endpoint: 'http://collector:4318/v1/traces',
        protocol: 'http/protobuf',
        sampler: 'parentbased_traceidratio',
        samplerArg: '0.1',
      },
    ],
    [
      'an exporter alone, to the default endpoint',
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      {
        enabled: true,
        exporter: 'otlp',
        endpoint: 'http://localhost:4317',
        protocol: 'grpc',
        sampler: 'parentbased_always_on',
      },
    ],
    [
      'a non-OTLP exporter, no endpoint',
      { OTEL_TRACES_EXPORTER: 'console' },
      { enabled: true, exporter: 'console', sampler: 'parentbased_always_on' },
    ],
    [
      'exporter none wins over an endpoint',
      { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' },
      { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none' },
    ],
    [
      'OTEL_SDK_DISABLED in any case',
      { OTEL_SDK_DISABLED: ' TRUE ', OTEL_TRACES_EXPORTER: 'otlp' },
      { enabled: false, reason: 'OTEL_SDK_DISABLED=true' },
    ],
  ])('%s', (_name, env, expected) => {
    expect(tracingSettings(env)).toEqual(expected);
  });
});
