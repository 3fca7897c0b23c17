import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { INTERNAL_PATHS } from '../../../shared/contract';
import { ErrorBody } from '../schemas/api';
import type { CatalogReader } from '../store/catalog-store';

const VersionBody = Type.Object({
  version: Type.Integer({ minimum: 0, description: 'The catalog version this replica serves' }),
});

/**
 * `GET /internal/v1/catalog-version`, polled by every gateway with its internal token: the
 * version this replica serves, after catching up with the store, so a gateway learns of a change
 * from the store itself, not only from its announcement. Never routed by the gateway's proxy.
 */
export const internalCatalogVersionRoutes: FastifyPluginAsyncTypebox<{
  store: Pick<CatalogReader, 'refresh'>;
}> = async (app, { store }) => {
  app.get(
    INTERNAL_PATHS.catalogVersion,
    {
      logLevel: 'warn',
      config: { internal: true },
      schema: { hide: true, response: { 200: VersionBody, 401: ErrorBody } },
    },
    async () => ({ version: await store.refresh() }),
  );
};
