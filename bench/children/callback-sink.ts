// The ingress benchmark's callback endpoint in a process of its own: the turns' replies land
// here, so the load generator's event loop (which times the acks) does not also serve them, as a
// webhook sender and its callback receiver are apart in the real world too.
import { fromParent, toParent } from "../lib/child.js";
import { startCallbackSink } from "../lib/sink.js";

export type CallbackSinkIn = { type: "count"; ask: number };
export type CallbackSinkOut = { type: "ready"; url: string } | { type: "count"; ask: number; received: number } | { type: "error"; message: string };

try {
  const sink = await startCallbackSink();
  fromParent<CallbackSinkIn>((message) => toParent<CallbackSinkOut>({ type: "count", ask: message.ask, received: sink.received() }));
  process.once("SIGTERM", () => void sink.close().then(() => process.exit(0)));
  toParent<CallbackSinkOut>({ type: "ready", url: sink.url });
} catch (err) {
  toParent<CallbackSinkOut>({ type: "error", message: String(err) });
}
