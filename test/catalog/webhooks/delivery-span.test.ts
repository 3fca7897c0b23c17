import { SpanStatusCode, trace } from '@opentelemetry/api';
import { node } from '@opentelemetry/sdk-node';
import {
  attemptDelivery,
  queuedDelivery,
} from '../../../services/catalog/src/webhooks/delivery-worker';
import { startReceiver, subscription, toolCreated } from '../../support/webhook-receiver';

const exporter = new node.InMemorySpanExporter();
const provider = new node.NodeTracerProvider({
  spanProcessors: [new node.SimpleSpanProcessor(exporter)],
});

beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
});

test('each attempt is a webhook.deliver span, linked to the change that enqueued it', async () => {
  const receiver = await startReceiver((n) => ({ status: n === 1 ? 503 : 200 }));
  try {
    const sub = subscription(receiver.url);
    const event = toolCreated(sub.id);
    // The catalog change runs in a span of its own; the delivery remembers it when enqueued.
    const delivery = trace.getTracer('test').startActiveSpan('catalog.change', (span) => {
      try {
        return { span, delivery: queuedDelivery(sub, event) };
      } finally {
        span.end();
      }
    });
    const options = {
      lookup: jest.fn(async () => sub),
      disable: async () => undefined,
      schedule: [100],
      timeoutMs: 3_000,
      allowPrivate: true,
    };
    expect(await attemptDelivery(delivery.delivery, 1, options)).toMatchObject({
      outcome: 'retrying',
    });
    expect(await attemptDelivery(delivery.delivery, 2, options)).toMatchObject({
      outcome: 'delivered',
    });

    // The owning key travels with the delivery: SubscriptionStore.get(keyId, id) needs it.
    expect(options.lookup).toHaveBeenCalledWith(sub.id, sub.keyId);

    const spans = exporter.getFinishedSpans().filter((s) => s.name === 'webhook.deliver');
    expect(spans.map((s) => s.attributes)).toEqual([
      {
        'webhook.event.type': 'tool.created',
        'webhook.event.id': event.id,
        'webhook.subscription.id': sub.id,
        'webhook.attempt': 1,
        'webhook.outcome': 'retrying',
        'http.response.status_code': 503,
      },
      {
        'webhook.event.type': 'tool.created',
        'webhook.event.id': event.id,
        'webhook.subscription.id': sub.id,
        'webhook.attempt': 2,
        'webhook.outcome': 'delivered',
        'http.response.status_code': 200,
      },
    ]);
    expect(spans.map((s) => s.status.code)).toEqual([SpanStatusCode.ERROR, SpanStatusCode.UNSET]);
    const changeContext = delivery.span.spanContext();
    for (const span of spans) {
      expect(span.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
        [changeContext.traceId, changeContext.spanId],
      ]);
      // A span of its own trace: the delivery happens long after the change's request ended.
      expect(span.spanContext().traceId).not.toBe(changeContext.traceId);
    }
  } finally {
    await receiver.close();
  }
});
