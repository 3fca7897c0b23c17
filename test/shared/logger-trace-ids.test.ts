import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { node } from '@opentelemetry/sdk-node';
import pino from 'pino';
import { loggerOptions } from '../../services/shared/logger';

/**
 * The catalog keeps OpenTelemetry's async context, and its logger puts the active span's ids on
 * every line: also on the lines of a webhook delivery, which runs in a span of its own outside
 * any request.
 */
describe('trace ids from the active span (the catalog’s logger)', () => {
  const provider = new node.NodeTracerProvider();
  beforeAll(() => provider.register());
  afterAll(async () => {
    await provider.shutdown();
    context.disable();
    trace.disable();
  });

  function logger(traceIds: boolean) {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const log = pino(
      loggerOptions({ service: 'catalog', level: 'info', pretty: false, traceIds }),
      sink,
    );
    return { log, lines };
  }

  test('a line written in an active span, after an await, carries its ids; one outside none', async () => {
    const { log, lines } = logger(true);
    const ids = await trace.getTracer('test').startActiveSpan('webhook.deliver', async (span) => {
      await new Promise((r) => setImmediate(r));
      log.warn('Webhook delivery failed for good');
      span.end();
      return span.spanContext();
    });
    log.info('outside');
    await new Promise((r) => setImmediate(r));
    expect(lines[0]).toMatchObject({ trace_id: ids.traceId, span_id: ids.spanId });
    expect(lines[1]).not.toHaveProperty('trace_id');
  });

  test('without traceIds (the gateway’s logger) no line carries them', async () => {
    const { log, lines } = logger(false);
    trace.getTracer('test').startActiveSpan('request', (span) => {
      log.info('inside');
      span.end();
    });
    await new Promise((r) => setImmediate(r));
    expect(lines[0]).not.toHaveProperty('trace_id');
  });
});
