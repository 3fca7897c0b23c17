import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { openapiOptions } from '../../../shared/openapi';

/**
 * OpenAPI 3 document generated from the route schemas, at `GET /openapi.json`. The gateway
 * merges it with its own routes into the public API reference.
 */
export const openapiPlugin = fp(
  async function openapi(app: FastifyInstance) {
    await app.register(
      swagger,
      openapiOptions(
        'A catalog of AI tools, frameworks and platforms. Free keys see the core fields; Pro and Enterprise keys see the full records.',
      ),
    );
    app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () =>
      app.swagger(),
    );
  },
  { name: 'openapi' },
);
