import { startOtlpReceiver } from '../support/otlp-receiver';
import { waitFor } from '../support/ports';
import { registerKey, startStack } from '../support/services';

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_SPAN_ID = 'b7ad6b7169203331';

function otelEnv(endpoint: string, protocol: string) {
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}

/** SPEC B8: one client request is one trace across gateway and catalog. */
describe('one trace from the gateway to the catalog (OTLP/HTTP JSON)', () => {
  test('continues the given traceparent, the catalog span descends from the gateway client span', async () => {
    const receiver = await startOtlpReceiver();
    const env = otelEnv(receiver.endpoint, 'http/json');
    const stack = await startStack(env, env);
    try {
      const key = await registerKey(stack.gateway.url);
      const response = await fetch(`${stack.gateway.url}/v1/tools/langchain`, {
        headers: { 'x-api-key': key, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
      });
      expect(response.status).toBe(200);

      const inTrace = () => receiver.spans.filter((s) => s.traceId === TRACE_ID);
      const catalogServer = await waitFor(
        async () =>
          inTrace().find(
            (s) => s.service === 'tool-directory-catalog' && s.kind === SPAN_KIND_SERVER,
          ),
        { what: 'the catalog server span' },
      );
      const gatewayServer = inTrace().find(
        (s) => s.service === 'tool-directory-gateway' && s.kind === SPAN_KIND_SERVER,
      );
      const gatewayClient = inTrace().find(
        (s) => s.service === 'tool-directory-gateway' && s.kind === SPAN_KIND_CLIENT,
      );

      expect(gatewayServer?.parentSpanId).toBe(PARENT_SPAN_ID);
      expect(gatewayClient).toBeDefined();
      expect(catalogServer.parentSpanId).toBe(gatewayClient!.spanId);
      expect(gatewayServer?.attributes['http.route']).toBe('/v1/tools/:slug');

      const tiers = inTrace()
        .filter((s) => s.attributes['tool_directory.tier'] === 'free')
        .map((s) => s.service);
      expect(new Set(tiers)).toEqual(new Set(['tool-directory-gateway', 'tool-directory-catalog']));

      const everything = JSON.stringify(receiver.spans);
      expect(everything).not.toContain(key);
      expect(everything).not.toContain(key.slice(4, 20));

      // Logs carry the same trace, and never the key.
      await waitFor(
        async () => (stack.gateway.output.some((l) => l.includes(TRACE_ID)) ? true : undefined),
        {
          what: 'a gateway log line with the trace id',
        },
      );
      const requestLine = JSON.parse(
        stack.gateway.output.find((l) => l.includes(TRACE_ID) && l.includes('request completed'))!,
      ) as Record<string, unknown>;
      expect(requestLine).toMatchObject({
        trace_id: TRACE_ID,
        route: '/v1/tools/:slug',
        status: 200,
        tier: 'free',
      });
      expect(typeof requestLine.span_id).toBe('string');
      expect(typeof requestLine.reqId).toBe('string');
      expect(typeof requestLine.durationMs).toBe('number');
      expect(stack.catalog.output.some((l) => l.includes(TRACE_ID))).toBe(true);
      expect([...stack.gateway.output, ...stack.catalog.output].join('\n')).not.toContain(key);
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });
});

describe('OTLP/HTTP protobuf', () => {
  test('exports the trace in protobuf when asked to', async () => {
    const receiver = await startOtlpReceiver();
    const env = otelEnv(receiver.endpoint, 'http/protobuf');
    const stack = await startStack(env, env);
    try {
      const key = await registerKey(stack.gateway.url);
      await fetch(`${stack.gateway.url}/v1/categories`, {
        headers: { 'x-api-key': key, traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
      });
      const traceIdBytes = Buffer.from(TRACE_ID, 'hex');
      await waitFor(
        async () =>
          receiver.protobufBodies.filter((b) => b.includes(traceIdBytes)).length >= 2
            ? true
            : undefined,
        { what: 'protobuf exports from both services' },
      );
      const bodies = Buffer.concat(receiver.protobufBodies);
      expect(bodies.includes(Buffer.from('tool-directory-gateway'))).toBe(true);
      expect(bodies.includes(Buffer.from('tool-directory-catalog'))).toBe(true);
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });
});

describe('no exporter unless configured', () => {
  test('without OTEL_TRACES_EXPORTER nothing is sent, even with an endpoint set', async () => {
    const receiver = await startOtlpReceiver();
    const stack = await startStack(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' },
    );
    try {
      const key = await registerKey(stack.gateway.url);
      await fetch(`${stack.gateway.url}/v1/categories`, { headers: { 'x-api-key': key } });
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.spans).toEqual([]);
      expect(receiver.protobufBodies).toEqual([]);
    } finally {
      await stack.stop();
      await receiver.close();
    }
  });
});
