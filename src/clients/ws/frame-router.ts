// One frame from a client: checked (size, text, JSON shape), then routed — subscriptions to the
// registry, `send` and `interrupt` to the gateway ingress. Each frame is queued on its client, so
// a client's frames are handled one at a time in arrival order.
import type { Logger } from "pino";
import type { RawData } from "ws";
import { SessionNotAddressableError, type AcceptResult, type GatewayIngress } from "../../gateway/types.js";
import type { HubClient } from "./client.js";
import {
  ackFrame,
  frameError,
  parseClientFrame,
  subscribedFrame,
  unsubscribedFrame,
  type ClientFrame,
  type InterruptFrame,
  type SendFrame,
  type SubscribeFrame,
} from "./frames.js";
import type { SubscriptionRegistry } from "./subscriptions.js";

export interface FrameRouterDeps {
  registry: SubscriptionRegistry;
  /** Interrupts go here. */
  ingress: GatewayIngress;
  /** A `send` frame, recorded; resolves with the client message id used and the ingress result. */
  onSend: (frame: SendFrame) => Promise<{ clientMessageId: string; result: AcceptResult }>;
  logger: Logger;
  /** Largest frame handled (bytes); larger ones get a `frame_too_large` error. */
  maxFrameBytes: number;
  maxSubscriptions: number;
}

/** Handles a frame as it arrives from a client. */
export type FrameHandler = (client: HubClient, data: RawData, isBinary: boolean) => void;

export function createFrameRouter(deps: FrameRouterDeps): FrameHandler {
  const { registry, logger, maxFrameBytes, maxSubscriptions } = deps;

  const onFrame = (client: HubClient, data: RawData, isBinary: boolean): void => {
    const size = byteLength(data);
    if (size > maxFrameBytes) {
      return client.enqueue(() =>
        client.sendErrorFrame({ code: "frame_too_large", message: `frame of ${size} bytes exceeds the limit of ${maxFrameBytes} bytes` }),
      );
    }
    if (isBinary) {
      return client.enqueue(() => client.sendErrorFrame({ code: "bad_frame", message: "binary frames are not supported; send JSON text" }));
    }
    const parsed = parseClientFrame(rawText(data));
    if (!parsed.ok) return client.enqueue(() => client.sendErrorFrame(parsed));
    client.enqueue(() => dispatch(client, parsed.frame));
  };

  const dispatch = async (client: HubClient, frame: ClientFrame): Promise<void> => {
    switch (frame.type) {
      case "subscribe":
        return subscribe(client, frame);
      case "unsubscribe":
        registry.unsubscribe(client, frame.session_id);
        return client.send(unsubscribedFrame(frame.session_id));
      case "send":
        return send(client, frame);
      case "interrupt":
        return interrupt(client, frame);
    }
  };

  const subscribe = async (client: HubClient, frame: SubscribeFrame): Promise<void> => {
    if (!client.sessions.has(frame.session_id) && client.sessions.size >= maxSubscriptions) {
      return client.sendErrorFrame(
        { code: "too_many_subscriptions", message: `at most ${maxSubscriptions} subscriptions per connection` },
        { session_id: frame.session_id },
      );
    }
    try {
      await registry.subscribe(client, frame.session_id, frame.since);
    } catch (err) {
      logger.error({ err, sessionId: frame.session_id }, "websocket subscribe failed");
      return client.sendErrorFrame(frameError("unavailable"), { session_id: frame.session_id });
    }
    client.send(subscribedFrame(frame.session_id));
  };

  const send = async (client: HubClient, frame: SendFrame): Promise<void> => {
    let outcome;
    try {
      outcome = await deps.onSend(frame);
    } catch (err) {
      const context = { session_id: frame.session_id, ...(frame.client_message_id ? { client_message_id: frame.client_message_id } : {}) };
      if (err instanceof SessionNotAddressableError) return client.sendErrorFrame({ code: "session_not_addressable", message: err.message }, context);
      logger.error({ err, sessionId: frame.session_id }, "websocket send: the gateway did not accept the message");
      return client.sendErrorFrame({ code: "internal", message: "the message was not accepted; retry" }, context);
    }
    const { clientMessageId, result } = outcome;
    if (result.status === "rejected") {
      return client.send(
        ackFrame({ client_message_id: clientMessageId, status: "rejected", session_id: frame.session_id, reason: result.reason }),
      );
    }
    client.send(ackFrame({ client_message_id: clientMessageId, status: result.status, session_id: result.sessionId }));
  };

  const interrupt = async (client: HubClient, frame: InterruptFrame): Promise<void> => {
    try {
      await deps.ingress.interrupt(frame.session_id, {
        ...(frame.text !== undefined ? { text: frame.text } : {}),
        ...(frame.hard !== undefined ? { hard: frame.hard } : {}),
      });
    } catch (err) {
      logger.error({ err, sessionId: frame.session_id }, "websocket interrupt failed");
      client.sendErrorFrame({ code: "internal", message: "the interrupt was not delivered; retry" }, { session_id: frame.session_id });
    }
  };

  return onFrame;
}

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
