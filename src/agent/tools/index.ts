export { ToolRegistry, type ToolContext, type ToolOutcome, type ZodTool, type JsonSchemaTool } from "./registry.js";
export { createBuiltinTools, getCurrentTimeTool } from "./builtin.js";
