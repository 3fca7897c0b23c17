import { type RedisClient, isCluster, onMastersChanged } from '../redis';
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
 *
 * On a Redis Cluster, PUBLISH reaches the subscribers of every node (the cluster bus forwards
 * it), so one subscriber connection to any node hears everything; when that node is lost, ioredis
 * subscribes again on another node, and the listeners hear `null` since the cluster lost a node.
 * Sharded pub/sub (SPUBLISH, Redis 7) would keep a message on one shard but needs a subscriber
 * connection per master and Redis 7 everywhere; the feed carries a few messages per change, so
 * the broadcast costs nothing worth that (docs/deploy.md, "Redis Cluster").
 */
export class RedisChangeFeed implements ChangeFeed {
  readonly kind = 'redis';
  private readonly listeners = new ListenerRegistry();
  private subscriber: RedisClient | undefined;

  /**
   * `publisher` stays the caller's. The subscriber connection is the feed's: the one given, or
   * one made by `subscriber` on the first subscription (a process that only publishes, like a
   * CLI, makes none and may give none).
   */
  constructor(
    private readonly publisher: RedisClient,
    private readonly givenSubscriber?: RedisClient | (() => RedisClient),
  ) {}

  private channels(): string[] {
    return this.listeners.topics().map((topic) => CHANNEL_PREFIX + topic);
  }

  private connectSubscriber(): RedisClient {
    const given = this.givenSubscriber;
    if (given === undefined) throw new Error('this change feed only publishes');
    const subscriber = typeof given === 'function' ? given() : given;
    // A connection of the feed's own: the publisher's owner reports Redis's state.
    if (typeof given === 'function') subscriber.on('error', () => undefined);
    // The feed subscribes again on every connection itself (below), its failure handled. ioredis's
    // own re-subscription leaves its command's failure unhandled (a reply not come within the
    // command timeout, the connection closed first), which ends a service's process. A cluster's
    // subscriber connection is never reconnected, and ioredis handles its re-subscription.
    if (!isCluster(subscriber)) subscriber.options.autoResubscribe = false;
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
    // A cluster lost a master: if it was the node subscribed on, messages were missed.
    onMastersChanged(subscriber, () => this.listeners.emitAll(null));
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
    const given = this.givenSubscriber;
    (this.subscriber ?? (typeof given === 'function' ? undefined : given))?.disconnect();
  }
}
