import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';
import { errors } from 'oidc-provider';
import { AlreadyConsumedError, type OAuthStore } from './oauth-store';

/**
 * oidc-provider's storage adapter over the key store's OAuth records: one adapter per model
 * (`Client`, `Grant`, `AuthorizationCode`, `AccessToken`, `RefreshToken`, `Interaction`,
 * `Session`, …), each record kept until the expiry oidc-provider gives it. A code consumed twice,
 * even by two replicas at once, is refused as a reused grant: oidc-provider then revokes what the
 * first use issued.
 */
export function oauthAdapter(store: OAuthStore): AdapterFactory {
  return (model: string): Adapter => ({
    async upsert(id, payload, expiresIn) {
      const expiresAt = expiresIn === undefined ? null : Date.now() + expiresIn * 1000;
      await store.upsert(model, id, payload as Record<string, unknown>, expiresAt, {
        grantId: payload.grantId,
        uid: payload.uid,
        userCode: payload.userCode,
      });
    },
    async find(id) {
      return (await store.find(model, id))?.payload as AdapterPayload | undefined;
    },
    async findByUid(uid) {
      return (await store.findBy(model, 'uid', uid))?.payload as AdapterPayload | undefined;
    },
    async findByUserCode(userCode) {
      return (await store.findBy(model, 'userCode', userCode))?.payload as
        AdapterPayload | undefined;
    },
    async consume(id) {
      try {
        await store.consume(model, id);
      } catch (err) {
        if (err instanceof AlreadyConsumedError) {
          throw new errors.InvalidGrant('grant request is invalid');
        }
        throw err;
      }
    },
    async destroy(id) {
      await store.destroy(model, id);
    },
    async revokeByGrantId(grantId) {
      await store.revokeByGrantId(grantId);
    },
  });
}
