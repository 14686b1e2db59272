// The tool registry: schemas offered to the model, validation, and errors as results.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolRegistry, createBuiltinTools } from "../../src/agent/tools/index.js";

const ctx = { signal: new AbortController().signal, sessionId: "s1" };

describe("ToolRegistry", () => {
  it("offers get_current_time with a JSON schema and answers it", async () => {
    const tools = createBuiltinTools();
    const [spec] = tools.specs();
    expect(spec.name).toBe("get_current_time");
    expect(spec.parameters).toMatchObject({ type: "object", properties: { timezone: { type: "string" } } });
    expect(spec.parameters).not.toHaveProperty("$schema");
    const outcome = await tools.execute("get_current_time", '{"timezone":"Asia/Tokyo"}', ctx);
    expect(outcome.ok).toBe(true);
    const body = JSON.parse(outcome.content) as { iso: string; timezone: string; local: string };
    expect(body.timezone).toBe("Asia/Tokyo");
    expect(Math.abs(Date.parse(body.iso) - Date.now())).toBeLessThan(5_000);
    expect(body.local.length).toBeGreaterThan(0);
  });

  it("validates arguments against a JSON-schema tool", async () => {
    const tools = new ToolRegistry().registerJsonSchema({
      name: "add",
      description: "Adds two numbers.",
      parameters: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
        additionalProperties: false,
      },
      handler: (args) => Number(args.a) + Number(args.b),
    });
    expect(await tools.execute("add", '{"a":1,"b":2}', ctx)).toEqual({ ok: true, content: "3" });
    const missing = await tools.execute("add", '{"a":1}', ctx);
    expect(missing.ok).toBe(false);
    expect(missing.content).toMatch(/^Error: invalid arguments: b/);
    expect((await tools.execute("add", '{"a":1,"b":2,"c":3}', ctx)).ok).toBe(false);
  });

  it("turns a throwing handler, bad JSON and unknown tools into error results", async () => {
    const tools = new ToolRegistry().register({
      name: "boom",
      description: "Always fails.",
      schema: z.object({}),
      handler: () => {
        throw new Error("kaput");
      },
    });
    expect(await tools.execute("boom", "{}", ctx)).toEqual({ ok: false, content: "Error: kaput" });
    expect((await tools.execute("boom", "{", ctx)).content).toMatch(/not valid JSON/);
    expect(await tools.execute("nope", "{}", ctx)).toEqual({ ok: false, content: 'Error: unknown tool "nope"' });
    // Empty arguments mean {}.
    expect((await tools.execute("boom", "", ctx)).content).toBe("Error: kaput");
  });

  it("refuses duplicate and malformed names", () => {
    const tools = createBuiltinTools();
    expect(() => tools.register({ name: "get_current_time", description: "", schema: z.object({}), handler: () => 1 })).toThrow(/already/);
    expect(() => tools.register({ name: "has space", description: "", schema: z.object({}), handler: () => 1 })).toThrow(/invalid tool name/);
  });

  it("offers a JSON schema zod cannot convert as is, and then only requires an object", async () => {
    const parameters = {
      type: "object",
      properties: { mode: { type: "string" }, path: { type: "string" } },
      if: { properties: { mode: { const: "file" } } },
      then: { required: ["path"] },
    };
    const tools = new ToolRegistry().registerJsonSchema({ name: "open", description: "Opens.", parameters, handler: (args) => args });
    expect(tools.specs()[0].parameters).toEqual(parameters);
    expect(await tools.execute("open", '{"mode":"file","path":"/x"}', ctx)).toEqual({ ok: true, content: '{"mode":"file","path":"/x"}' });
    expect((await tools.execute("open", "[1,2]", ctx)).content).toMatch(/^Error: invalid arguments/);
  });
});
