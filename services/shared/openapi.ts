import type { SwaggerOptions } from '@fastify/swagger';

/**
 * The OpenAPI 3 frame both services generate their documents in: one title and version, and
 * the `x-api-key` header as the security scheme of every route that does not opt out.
 */
export function openapiOptions(description: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Tool Directory API', version: '1.0.0', description },
      components: {
        securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      },
      security: [{ apiKey: [] }],
    },
  };
}
