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
 * subscriber reconnects, every listener hears `null` and forgets what it cached. Redis being down
 * never stops a process from starting or subscribing: the subscriptions are made whenever the
 * subscriber connects, and meanwhile each process reads changes from the stores themselves.
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

  private channels(): string[] {
    return this.listeners.topics().map((topic) => CHANNEL_PREFIX + topic);
  }

  private connectSubscriber(): Redis {
    const subscriber =
      this.givenSubscriber ?? this.publisher.duplicate({ enableOfflineQueue: true });
    // A connection of the feed's own: the publisher's owner reports Redis's state.
    if (!this.givenSubscriber) subscriber.on('error', () => undefined);
    let connectedBefore = subscriber.status === 'ready';
    subscriber.on('message', (channel: string, message: string) =>
      this.listeners.emit(channel.slice(CHANNEL_PREFIX.length) as ChangeTopic, message),
    );
    subscriber.on('ready', () => {
      // Made again on every connection: one that failed while Redis was down is not remembered.
      void subscriber.subscribe(...this.channels()).catch(() => undefined);
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
    // Live once this resolves while Redis answers; otherwise made when the subscriber connects.
    if (first) await this.subscriber.subscribe(CHANNEL_PREFIX + topic).catch(() => undefined);
    return stop;
  }

  async close(): Promise<void> {
    // A subscriber has nothing in flight to wait for.
    (this.subscriber ?? this.givenSubscriber)?.disconnect();
  }
}
