import swagger from '@fastify/swagger';
import type { TSchema } from '@sinclair/typebox';
import Fastify from 'fastify';
import type { OpenAPIV3_1 } from 'openapi-types';
import { openapiOptions } from '../../../shared/openapi';
import { DEFAULT_CHANGES_RETENTION_DAYS } from '../config';
import { catalogRoutes } from '../routes';
import { webhookRoutes } from '../routes/webhooks';
import { WEBHOOK_EVENTS } from './webhooks';
import type { CatalogStore } from '../store/catalog-store';
import type { DeliveryQueue, SubscriptionStore } from '../webhooks/webhook-types';

/** A dependency that refuses every call: the handlers never run here. */
function absent<T extends object>(): T {
  return new Proxy({} as T, {
    get: () => {
      throw new Error('the OpenAPI document is generated without stores');
    },
  });
}

/** Standard Webhooks' headers, on every delivery: how the receiver knows it came from us. */
const DELIVERY_HEADERS: OpenAPIV3_1.ParameterObject[] = [
  ['webhook-id', "The event's id: the same on every retry of one event to one subscription"],
  ['webhook-timestamp', 'Unix time in seconds of this attempt'],
  [
    'webhook-signature',
    '`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed by the base64-decoded part of the secret after `whsec_`',
  ],
].map(([name, description]) => ({
  name: name!,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' },
}));

/** How the receiver's answer is taken: the same for every event. */
const RECEIVER_ANSWERS = {
  '2XX': { description: 'Delivered: any 2xx answered within the time limit (10 s by default)' },
  '410': { description: 'Gone: the subscription is disabled, nothing more is delivered to it' },
  default: {
    description:
      'Any other answer, a redirect, a timeout or no connection: tried again later, ten attempts over about three days by default',
  },
};

/**
 * An event's schema as `components.schemas` holds it: without its own `$id` (its name is its
 * key there), and the schemas it names (the tool record, which the routes name too) as `$ref`s.
 */
function referencing(schema: TSchema): OpenAPIV3_1.SchemaObject {
  return JSON.parse(
    JSON.stringify(schema, (key, value: { $id?: string } | undefined) => {
      if (key === '$id') return undefined;
      return key !== '' && typeof value?.$id === 'string'
        ? { $ref: `#/components/schemas/${value.$id}` }
        : value;
    }),
  ) as OpenAPIV3_1.SchemaObject;
}

/** `webhooks`: one POST per event type, its body the event's schema. */
function webhookDeliveries(): Record<string, OpenAPIV3_1.PathItemObject> {
  return Object.fromEntries(
    Object.entries(WEBHOOK_EVENTS).map(([type, { summary, body }]) => [
      type,
      {
        post: {
          operationId: `${type.replace(/\.(\w)/g, (_, c: string) => c.toUpperCase())}Event`,
          summary,
          description:
            'POSTed to the URL of each subscription it is for, signed as Standard Webhooks (https://www.standardwebhooks.com/).',
          tags: ['webhooks'],
          // No API key: the receiver checks the signature.
          security: [],
          parameters: DELIVERY_HEADERS,
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: { $ref: `#/components/schemas/${body.$id}` } },
            },
          },
          responses: RECEIVER_ANSWERS,
        },
      },
    ]),
  );
}

/**
 * The catalog's part of the public OpenAPI document, generated from its route schemas by
 * registering its routes in a Fastify instance that never listens. The gateway builds it at
 * start, so its API reference never depends on the catalog being up; both services ship from
 * this repository in one version, so it is the document the catalog's routes describe. The
 * handlers never run: stores that refuse every call stand in for the real ones.
 */
export async function catalogOpenapiDocument(): Promise<
  OpenAPIV3_1.Document & { paths: OpenAPIV3_1.PathsObject }
> {
  const app = Fastify();
  // Only the schemas' documentation is wanted: no validator or serializer is compiled.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => JSON.stringify);
  await app.register(swagger, openapiOptions());
  await app.register(catalogRoutes, {
    prefix: '/v1',
    store: absent<CatalogStore>(),
    meta: { attribution: '' },
    changesRetentionDays: DEFAULT_CHANGES_RETENTION_DAYS,
  });
  await app.register(webhookRoutes, {
    prefix: '/v1',
    subscriptions: absent<SubscriptionStore>(),
    queue: absent<DeliveryQueue>(),
    allowPrivate: false,
  });
  await app.ready();
  const document = app.swagger() as OpenAPIV3_1.Document & { paths: OpenAPIV3_1.PathsObject };
  await app.close();
  const events = Object.values(WEBHOOK_EVENTS).map(({ body }) => [body.$id!, referencing(body)]);
  return {
    ...document,
    components: {
      ...document.components,
      schemas: { ...document.components?.schemas, ...Object.fromEntries(events) },
    },
    webhooks: webhookDeliveries(),
  };
}
