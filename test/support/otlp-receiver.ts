import { createServer } from 'node:http';
import { freePort } from './ports';

export interface ReceivedSpan {
  service: string;
  scope: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  kind: number;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  attributes: Record<string, unknown>;
}

interface OtlpJson {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: {
      scope: { name: string };
      spans: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        kind: number;
        status?: { code?: number };
        attributes: { key: string; value: Record<string, unknown> }[];
      }[];
    }[];
  }[];
}

/**
 * An OTLP/HTTP trace receiver in the test process: it keeps every JSON export as flat spans,
 * and every protobuf export as raw bytes.
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const protobufBodies: Buffer[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        const payload = JSON.parse(body.toString()) as OtlpJson;
        for (const resourceSpan of payload.resourceSpans) {
          const service =
            resourceSpan.resource.attributes.find((a) => a.key === 'service.name')?.value
              .stringValue ?? '';
          for (const scopeSpan of resourceSpan.scopeSpans) {
            for (const span of scopeSpan.spans) {
              spans.push({
                service,
                scope: scopeSpan.scope.name,
                name: span.name,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                kind: span.kind,
                statusCode: span.status?.code ?? 0,
                attributes: Object.fromEntries(
                  span.attributes.map((a) => [a.key, Object.values(a.value)[0]]),
                ),
              });
            }
          }
        }
      } else if (
        req.url === '/v1/traces' &&
        req.headers['content-type'] === 'application/x-protobuf'
      ) {
        protobufBodies.push(body);
      }
      res
        .writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' })
        .end('{}');
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    protobufBodies,
    close: () => new Promise((r) => server.close(r)),
  };
}
