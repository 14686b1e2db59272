// What the gateway core needs from the event and interrupt buses (implemented over Redis).
import type { GatewayEvent } from "./types.js";

export interface EventPublisher {
  publish(sessionId: string, kind: string, data: Record<string, unknown>): Promise<GatewayEvent>;
}

export interface EventSubscriber {
  subscribe(sessionId: string, listener: (event: GatewayEvent) => void, options?: { since?: string }): Promise<() => void>;
}

export interface InterruptRequest {
  sessionId: string;
  text?: string;
  hard?: boolean;
  /** Interrupt only turns whose input is older than this inbox row (busy mode 'interrupt'). */
  beforeInboxId?: number;
}

export interface InterruptPublisher {
  publish(request: InterruptRequest): Promise<void>;
}
