// The agent: one turn behind the durable session turn lease, its model/tool loop, tools and
// compaction, plus the model providers.
export { Agent } from "./agent.js";
export { Turn, type TurnView, type TurnSettings, type FlushOutcome } from "./turn.js";
export type * from "./turn-types.js";
export type * from "./types.js";
export { runModelLoop } from "./loop.js";
export { ToolRegistry, createBuiltinTools, getCurrentTimeTool } from "./tools/index.js";
export type { ToolContext, ToolOutcome, ZodTool, JsonSchemaTool } from "./tools/index.js";
export { PERSIST_AFTER_ADMISSION_INTERRUPT } from "./messages.js";
export { COMPACTION_SUMMARY_KIND } from "./compaction.js";
export { isTurnLeaseLost } from "./persistence.js";
export * from "./notices.js";
export * from "./providers/index.js";
