// Tools the model may call. Each tool declares its arguments as a zod schema or a JSON schema;
// arguments are validated before the handler runs, and every failure (bad JSON, invalid
// arguments, unknown tool, a throwing handler) goes back to the model as the tool's result.
import { z } from "zod";
import type { ToolSpec } from "../types.js";

export interface ToolContext {
  /** Aborted when the turn is interrupted. */
  signal: AbortSignal;
  sessionId: string | null;
}

interface ToolBase {
  name: string;
  description: string;
}

/** A tool whose arguments are described by a zod schema (the JSON schema is derived from it). */
export interface ZodTool<S extends z.ZodType = z.ZodType> extends ToolBase {
  schema: S;
  handler: (args: z.infer<S>, ctx: ToolContext) => unknown;
}

/** A tool whose arguments are described by a JSON schema. */
export interface JsonSchemaTool extends ToolBase {
  parameters: Record<string, unknown>;
  handler: (args: Record<string, unknown>, ctx: ToolContext) => unknown;
}

export interface ToolOutcome {
  ok: boolean;
  /** The text the model reads as the tool's result. */
  content: string;
}

interface RegisteredTool {
  spec: ToolSpec;
  validator: z.ZodType;
  handler: (args: unknown, ctx: ToolContext) => unknown;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Keeps one runaway tool result (or error) from flooding the model's context and the store. */
export const MAX_RESULT_CHARS = 20_000;

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(arguments)"}: ${issue.message}`)
    .join("; ");
}

function capped(text: string): string {
  return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}… [truncated]` : text;
}

function resultText(value: unknown): string {
  return capped(typeof value === "string" ? value : (JSON.stringify(value) ?? "null"));
}

/** A failure as the model reads it; the cap holds for errors too (a tool chooses their text). */
function failure(text: string): ToolOutcome {
  return { ok: false, content: capped(`Error: ${text}`) };
}

export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();

  get size(): number {
    return this.tools.size;
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** A tool with a zod schema; the JSON schema the model sees is derived from it. */
  register<S extends z.ZodType>(tool: ZodTool<S>): this {
    return this.add(tool.name, tool.description, jsonSchemaOf(tool.schema), tool.schema, tool.handler as RegisteredTool["handler"]);
  }

  /**
   * A tool described by a plain JSON schema; arguments are validated against it. A schema zod
   * cannot convert (if/then/else, ...) only requires an object: the tool checks the rest itself.
   */
  registerJsonSchema(tool: JsonSchemaTool): this {
    let validator: z.ZodType;
    try {
      validator = z.fromJSONSchema(tool.parameters as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      validator = z.looseObject({});
    }
    return this.add(tool.name, tool.description, tool.parameters, validator, tool.handler as RegisteredTool["handler"]);
  }

  private add(
    name: string,
    description: string,
    parameters: Record<string, unknown>,
    validator: z.ZodType,
    handler: RegisteredTool["handler"],
  ): this {
    if (!TOOL_NAME.test(name)) throw new Error(`invalid tool name: ${JSON.stringify(name)}`);
    if (this.tools.has(name)) throw new Error(`tool already registered: ${name}`);
    this.tools.set(name, { spec: { name, description, parameters }, validator, handler });
    return this;
  }

  /** What the model is offered. */
  specs(): ToolSpec[] {
    return [...this.tools.values()].map((tool) => tool.spec);
  }

  /** Runs one call; never throws (an abort included: it comes back as a failed outcome). */
  async execute(name: string, rawArguments: string, ctx: ToolContext): Promise<ToolOutcome> {
    const tool = this.tools.get(name);
    if (!tool) return failure(`unknown tool "${name}"`);
    let parsed: unknown;
    try {
      parsed = rawArguments.trim() === "" ? {} : JSON.parse(rawArguments);
    } catch (err) {
      return failure(`the arguments are not valid JSON (${(err as Error).message})`);
    }
    const checked = tool.validator.safeParse(parsed);
    if (!checked.success) return failure(`invalid arguments: ${describeIssues(checked.error)}`);
    try {
      return { ok: true, content: resultText(await tool.handler(checked.data, ctx)) };
    } catch (err) {
      return failure(err instanceof Error ? err.message : String(err));
    }
  }
}
