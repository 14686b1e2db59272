// The offline echo model: deterministic replies, word-sized streaming, abort, tool directives.
import { describe, expect, it } from "vitest";
import { countWords, EchoProvider, wordChunks } from "../../../src/agent/providers/echo.js";
import { parseToolDirectives } from "../../../src/agent/providers/echo-directive.js";
import { isAbortError } from "../../../src/agent/providers/errors.js";
import type { ModelMessage } from "../../../src/agent/types.js";

const live = (): AbortSignal => new AbortController().signal;

describe("EchoProvider", () => {
  it("answers with the last user message, the same way every time", async () => {
    const echo = new EchoProvider();
    const messages: ModelMessage[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "first" },
      { role: "assistant", content: "Echo: first" },
      { role: "user", content: "hello  there, marker-42" },
    ];
    const one = await echo.complete({ messages, signal: live() });
    const two = await echo.complete({ messages, signal: live() });
    expect(one).toMatchObject({ content: "Echo: hello  there, marker-42", toolCalls: [], finishReason: "stop" });
    expect(two).toEqual(one);
    expect(echo.model).toBe("echo");
  });

  it("mentions the images of the last user message, with their type and size", async () => {
    const echo = new EchoProvider();
    const png = new Uint8Array(1229);
    const jpeg = new Uint8Array(300);
    const withText = await echo.complete({
      messages: [
        { role: "user", content: "older", images: [{ contentType: "image/gif", data: new Uint8Array(10) }] },
        { role: "user", content: "what is this?", images: [{ contentType: "image/png", data: png }, { contentType: "image/jpeg", data: jpeg }] },
      ],
      signal: live(),
    });
    expect(withText.content).toBe("Echo: what is this? [image: image/png, 1.2 KB] [image: image/jpeg, 300 B]");
    const alone = await echo.complete({ messages: [{ role: "user", content: "", images: [{ contentType: "image/webp", data: new Uint8Array(3 * 1024 * 1024) }] }], signal: live() });
    expect(alone.content).toBe("Echo: [image: image/webp, 3.0 MB]");
  });

  it("streams word-sized chunks that concatenate to the reply", async () => {
    const deltas: string[] = [];
    const result = await new EchoProvider().complete({
      messages: [{ role: "user", content: "  one two\tthree\n four " }],
      signal: live(),
      onDelta: (text) => deltas.push(text),
    });
    expect(deltas.join("")).toBe(result.content);
    expect(deltas).toEqual(["Echo:", "   one", " two", "\tthree", "\n four", " "]);
    expect(wordChunks("")).toEqual([]);
  });

  it("paces chunks by chunkDelayMs and stops between chunks when aborted", async () => {
    const echo = new EchoProvider({ chunkDelayMs: 40 });
    const text = "a b c d e f g h i j";
    const started = performance.now();
    await echo.complete({ messages: [{ role: "user", content: text }], signal: live() });
    // 11 chunks, 10 pauses.
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);

    // Aborted during a 20 s pause: the pause ends with the abort, not when its time is up.
    const paused = new EchoProvider({ chunkDelayMs: 20_000 });
    const controller = new AbortController();
    const deltas: string[] = [];
    let abortedAt = 0;
    const err = await paused
      .complete({
        messages: [{ role: "user", content: text }],
        signal: controller.signal,
        onDelta: (delta) => {
          deltas.push(delta);
          abortedAt = performance.now();
          controller.abort();
        },
      })
      .catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    // Half the pause: a stop that waited it out cannot pass, a busy machine's delay cannot fail it.
    expect(performance.now() - abortedAt).toBeLessThan(10_000);
    expect(deltas).toEqual(["Echo:"]);
  });

  it("calls the tool a directive names, then answers with its result", async () => {
    const echo = new EchoProvider({ toolDirectives: true });
    const messages: ModelMessage[] = [{ role: "user", content: 'weather please [[tool:get_weather {"city":"Paris"}]]' }];
    const deltas: string[] = [];
    const first = await echo.complete({ messages, signal: live(), onDelta: (t) => deltas.push(t) });
    expect(first.finishReason).toBe("tool_calls");
    expect(first.content).toBeNull();
    expect(deltas).toEqual([]);
    expect(first.toolCalls).toEqual([
      { id: "echo_call_1_0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ]);

    messages.push(
      { role: "assistant", content: null, tool_calls: first.toolCalls },
      { role: "tool", tool_call_id: "echo_call_1_0", content: "18C" },
    );
    const second = await echo.complete({ messages, signal: live(), onDelta: (t) => deltas.push(t) });
    expect(second).toMatchObject({ content: "Echo: weather please | get_weather -> 18C", toolCalls: [], finishReason: "stop" });
    expect(deltas.join("")).toBe(second.content);
  });

  it("echoes a directive as text unless directives are turned on", async () => {
    const text = 'weather please [[tool:get_weather {"city":"Paris"}]]';
    const result = await new EchoProvider().complete({
      messages: [{ role: "user", content: text }],
      tools: [{ name: "get_weather", description: "", parameters: {} }],
      signal: live(),
    });
    expect(result).toMatchObject({ content: `Echo: ${text}`, toolCalls: [], finishReason: "stop" });
  });

  it("never calls a tool without a directive, even when tools are offered", async () => {
    const result = await new EchoProvider().complete({
      messages: [{ role: "user", content: "what is the weather? [[not a directive]]" }],
      tools: [{ name: "get_weather", description: "", parameters: {} }],
      signal: live(),
    });
    expect(result.toolCalls).toEqual([]);
    expect(result.content).toBe("Echo: what is the weather? [[not a directive]]");
  });
});

describe("parseToolDirectives", () => {
  it("reads names, JSON arguments (even holding ]]) and several directives", () => {
    expect(parseToolDirectives('a [[tool:grid {"rows":[[1,2],[3]]}]] b [[tool:clock]] c')).toEqual({
      calls: [
        { name: "grid", arguments: '{"rows":[[1,2],[3]]}' },
        { name: "clock", arguments: "{}" },
      ],
      text: "a b c",
    });
  });

  it("keeps the rules for tricky arguments: strings holding ]], scalars, overlapping closes, space after the name", () => {
    expect(parseToolDirectives('[[tool:x {"s":"a]]b"}]]').calls).toEqual([{ name: "x", arguments: '{"s":"a]]b"}' }]);
    expect(parseToolDirectives("[[tool:x [1,[2]]]] tail")).toEqual({ calls: [{ name: "x", arguments: "[1,[2]]" }], text: "tail" });
    expect(parseToolDirectives("[[tool:x 5]]]").calls).toEqual([{ name: "x", arguments: "5" }]);
    expect(parseToolDirectives('[[tool:x "str"]]').calls).toEqual([{ name: "x", arguments: '"str"' }]);
    expect(parseToolDirectives("[[tool:x  ]]").calls).toEqual([{ name: "x", arguments: "{}" }]);
    expect(parseToolDirectives("[[tool:x abc def]]").calls).toEqual([{ name: "x", arguments: "abc def" }]);
    expect(parseToolDirectives("[[tool:x{}]]").calls).toEqual([]);
    // Arguments end before the next directive: each directive is read on its own.
    expect(parseToolDirectives("[[tool:a {oops [[tool:b {}]]").calls).toEqual([{ name: "b", arguments: "{}" }]);
  });

  it("is linear: 100,000-character adversarial messages parse in a few ms", () => {
    const size = 100_000;
    const fill = (unit: string): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
    const shapes: Record<string, string> = {
      "only ]": "]".repeat(size),
      "one directive, then ]": `[[tool:x ${"]".repeat(size)}`,
      "one directive, nested [ then ]": `[[tool:x ${"[".repeat(size / 2)}${"]".repeat(size / 2)}`,
      "an unclosed string full of ]]": `[[tool:x "${"]]".repeat(size / 2)}`,
      "many directives with unclosed objects": fill("[[tool:x {"),
      "many directives whose strings hold ]]": fill('[[tool:a ["]]" '),
      "many openings": fill("[[tool:"),
      "a name that never ends": `[[tool:${"a".repeat(size)}`,
      "many arrays of arrays": fill("[[tool:x [[[[1]]]] "),
    };
    for (const [name, message] of Object.entries(shapes)) {
      // The best of a few runs: a loaded machine's pauses are not the parser's.
      let best = Infinity;
      for (let run = 0; run < 5; run++) {
        const started = performance.now();
        parseToolDirectives(message);
        best = Math.min(best, performance.now() - started);
      }
      expect(best, name).toBeLessThan(25);
    }
  });

  it("passes malformed arguments through as written and ignores unclosed directives", () => {
    expect(parseToolDirectives("[[tool:x {oops]] tail").calls).toEqual([{ name: "x", arguments: "{oops" }]);
    expect(parseToolDirectives("[[tool:x {} no close")).toEqual({ calls: [], text: "[[tool:x {} no close" });
    expect(parseToolDirectives("[[tool:]]").calls).toEqual([]);
  });
});

describe("countWords", () => {
  it("counts what splitting on \\s would, every kind of space included", () => {
    const samples = ["", " ", "one", "  two words  ", "tab\tnew\nline\r\ncr", "nbsp\u00a0ideographic\u3000space\u2028sep", "a\u200bb", "émoji 🙂 ok", "\ufeffbom lead"];
    for (const text of samples) expect(countWords(text), JSON.stringify(text)).toBe(text.split(/\s+/).filter(Boolean).length);
  });

  it("gives the prompt's tokens as the sum over its messages", async () => {
    const messages: ModelMessage[] = [
      { role: "system", content: "be brief" },
      { role: "user", content: "three words here" },
    ];
    const result = await new EchoProvider().complete({ messages, signal: live() });
    expect(result.usage?.promptTokens).toBe(5);
    expect(result.usage?.completionTokens).toBe(4); // "Echo: three words here"
  });

  it("counts the prompt as it was asked, on a tool call too, whatever the caller does to its list afterwards", async () => {
    const messages: ModelMessage[] = [{ role: "user", content: 'look it up [[tool:lookup {"q":"x"}]]' }];
    const result = await new EchoProvider({ toolDirectives: true }).complete({ messages, signal: live() });
    expect(result.toolCalls).toHaveLength(1);
    messages.push({ role: "assistant", content: "many more words added later" });
    expect(result.usage?.promptTokens).toBe(5);
    expect(result.usage?.completionTokens).toBe(0);
  });
});

