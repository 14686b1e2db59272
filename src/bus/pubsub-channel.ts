// One Redis pub/sub channel, or a family of channels (`<family>:<member>`, heard with one pattern
// subscription): published on the commands connection, heard on a pub/sub connection that is
// shared (its owner closes it) or created on first listen() and owned (see SubscriberLink).
// Pub/sub is at-most-once: a user must cope with a lost message (every user here does: a
// waiter polls, a window is met again, a thread is reloaded at start-up).
import type { Redis } from "ioredis";
import { familyMember, familyPattern } from "./keys.js";
import { SubscriberLink } from "./subscriber-link.js";

export interface PubSubChannelOptions {
  /** Commands connection (PUBLISH); never closed here. */
  redis: Redis;
  /** A connection in subscriber mode shared with other users; absent: one is created and owned. */
  subscriber?: Redis | null;
  /** The channel's name, or with `family` the family's. */
  name: string;
  /** A family of channels: publish names a member, listening hears every member. */
  family?: boolean;
  /** A message arrived on the channel (or on any member of the family). */
  onMessage: (message: string) => void;
}

export class PubSubChannel {
  private readonly link: SubscriberLink;
  private readonly pattern: string | null;

  constructor(private readonly options: PubSubChannelOptions) {
    this.pattern = options.family ? familyPattern(options.name) : null;
    const hear = (heardOn: string, expected: string | null, message: string): void => {
      if (heardOn === expected) options.onMessage(message);
    };
    this.link = new SubscriberLink(
      options.redis,
      options.subscriber,
      this.pattern === null
        ? { message: (channel, message) => hear(channel, options.name, message) }
        : { pmessage: (pattern, _channel, message) => hear(pattern, this.pattern, message) },
    );
  }

  /** Subscribe; resolves once Redis confirmed it. */
  async listen(): Promise<void> {
    const subscriber = this.link.get();
    if (this.pattern === null) await subscriber.subscribe(this.options.name);
    else await subscriber.psubscribe(this.pattern);
  }

  /** Publish a message (on the family's `member`). */
  async publish(message: string, member?: string): Promise<void> {
    const channel = this.options.family ? familyMember(this.options.name, member ?? "") : this.options.name;
    await this.options.redis.publish(channel, message);
  }

  /** Stop hearing: an owned connection is closed, a shared one unsubscribed. */
  close(): Promise<void> {
    return this.pattern === null ? this.link.release([this.options.name]) : this.link.release([], [this.pattern]);
  }
}
