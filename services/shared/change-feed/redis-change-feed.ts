import type { Redis } from 'ioredis';
import {
  type ChangeFeed,
  type ChangeListener,
  type ChangeTopic,
  ListenerRegistry,
} from './change-feed';

const CHANNEL_PREFIX = 'tool-directory:changes:';

/**
 * The change feed on Redis pub/sub, for several replicas. Pub/sub keeps nothing: after the
 * subscriber reconnects, every listener hears `null` and forgets what it cached.
 */
export class RedisChangeFeed implements ChangeFeed {
  readonly kind = 'redis';
  private readonly listeners = new ListenerRegistry();
  private subscriber: Redis | undefined;

  /**
   * `publisher` stays the caller's. The subscriber connection is the feed's: the one given, or
   * one made on the first subscription (a process that only publishes, like a CLI, makes none).
   */
  constructor(
    private readonly publisher: Redis,
    private readonly givenSubscriber?: Redis,
  ) {}

  private connectSubscriber(): Redis {
    const subscriber =
      this.givenSubscriber ?? this.publisher.duplicate({ enableOfflineQueue: true });
    let connectedBefore = subscriber.status === 'ready';
    subscriber.on('message', (channel: string, message: string) =>
      this.listeners.emit(channel.slice(CHANNEL_PREFIX.length) as ChangeTopic, message),
    );
    subscriber.on('ready', () => {
      if (connectedBefore) this.listeners.emitAll(null);
      connectedBefore = true;
    });
    return subscriber;
  }

  async publish(topic: ChangeTopic, message: string): Promise<void> {
    await this.publisher.publish(CHANNEL_PREFIX + topic, message);
  }

  async subscribe(topic: ChangeTopic, listener: ChangeListener): Promise<() => void> {
    const first = !this.listeners.topics().includes(topic);
    const stop = this.listeners.add(topic, listener);
    this.subscriber ??= this.connectSubscriber();
    if (first) await this.subscriber.subscribe(CHANNEL_PREFIX + topic);
    return stop;
  }

  async close(): Promise<void> {
    // A subscriber has nothing in flight to wait for.
    (this.subscriber ?? this.givenSubscriber)?.disconnect();
  }
}
