import type { Tier } from './tiers';

/** Who is calling: set by the gateway from the API key, by the catalog from the gateway's headers. */
export interface Caller {
  tier: Tier;
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
  interface FastifyContextConfig {
    /** The route answers without credentials (health checks, portal, registration). */
    public?: boolean;
  }
}
