/**
 * The embedded engine's pub/sub: an in-process registry of channel and pattern subscribers.
 * PUBLISH delivers synchronously (from a command, a transaction or a Lua script alike) and
 * answers how many subscribers received the message, as Redis does.
 */
import { globMatch } from "./glob.js";

/** Channel, message and (for pattern subscribers) the matching pattern, as binary strings. */
export type ChannelListener = (channel: string, message: string, pattern?: string) => void;

export type SubscriptionKind = "channel" | "pattern";

export class ChannelRegistry {
  private readonly channels = new Map<string, Set<ChannelListener>>();
  private readonly patterns = new Map<string, Set<ChannelListener>>();

  /** Subscribes `listener` to each target; returns the function that unsubscribes it. */
  subscribe(kind: SubscriptionKind, targets: readonly string[], listener: ChannelListener) {
    const registry = kind === "channel" ? this.channels : this.patterns;
    for (const target of targets) {
      const listeners = registry.get(target) ?? new Set<ChannelListener>();
      registry.set(target, listeners);
      listeners.add(listener);
    }
    return (): void => {
      for (const target of targets) {
        const listeners = registry.get(target);
        listeners?.delete(listener);
        if (listeners?.size === 0) registry.delete(target);
      }
    };
  }

  /** Delivers to channel subscribers, then to each matching pattern; returns the receiver count. */
  publish(channel: string, message: string): number {
    let receivers = 0;
    for (const listener of this.channels.get(channel) ?? []) {
      listener(channel, message);
      receivers += 1;
    }
    for (const [pattern, listeners] of this.patterns) {
      if (!globMatch(pattern, channel)) continue;
      for (const listener of listeners) {
        listener(channel, message, pattern);
        receivers += 1;
      }
    }
    return receivers;
  }

  /** Channels with at least one subscriber, for PUBSUB CHANNELS. */
  activeChannels(): string[] {
    return [...this.channels.keys()];
  }

  subscriberCount(channel: string): number {
    return this.channels.get(channel)?.size ?? 0;
  }

  get patternCount(): number {
    return this.patterns.size;
  }
}
