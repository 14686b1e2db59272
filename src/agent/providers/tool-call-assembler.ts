// Rebuilds whole tool calls from streamed deltas. Each delta names its call by `index`; the id,
// type and name come once (usually first) and the arguments arrive as string pieces.
import type { ToolCall } from "../../state/types.js";

export interface ToolCallDelta {
  index: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

export class ToolCallAssembler {
  private readonly calls = new Map<number, PartialCall>();

  add(delta: ToolCallDelta): void {
    let call = this.calls.get(delta.index);
    if (!call) {
      call = { id: "", name: "", arguments: "" };
      this.calls.set(delta.index, call);
    }
    if (delta.id) call.id = delta.id;
    const name = delta.function?.name;
    // Some servers repeat the whole name on every delta; others split it.
    if (name && name !== call.name) call.name += name;
    if (delta.function?.arguments) call.arguments += delta.function.arguments;
  }

  /** The calls in index order; ids are filled in when the server sent none. */
  result(): ToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        id: call.id || `call_${index}_${Math.random().toString(36).slice(2, 10)}`,
        type: "function" as const,
        function: { name: call.name, arguments: call.arguments },
      }));
  }
}
