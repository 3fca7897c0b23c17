import type { Redis } from 'ioredis';

/** Channel on which key changes (create, revoke, set-tier) reach every gateway replica. */
export const KEY_CHANGES_CHANNEL = 'tool-directory:key-changes';

/** Announces that the key with this digest changed. */
export async function publishKeyChange(redis: Redis, digest: string): Promise<void> {
  await redis.publish(KEY_CHANGES_CHANNEL, digest);
}

/**
 * Delivers announced changes to `onChange(digest)`. After a reconnect, changes may have been
 * missed, so `onChange()` is called with no digest: the caller then forgets everything.
 */
export async function subscribeKeyChanges(
  subscriber: Redis,
  onChange: (digest?: string) => void,
): Promise<void> {
  subscriber.on('message', (_channel: string, digest: string) => onChange(digest));
  let connectedBefore = subscriber.status === 'ready';
  subscriber.on('ready', () => {
    if (connectedBefore) onChange();
    connectedBefore = true;
  });
  await subscriber.subscribe(KEY_CHANGES_CHANNEL);
}
