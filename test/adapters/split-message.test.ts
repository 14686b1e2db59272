import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitMessage } from "../../src/adapters/shared/split-message.js";

const squash = (text: string) => text.replace(/\s+/g, "");

describe("splitMessage", () => {
  it("keeps short text whole", () => {
    expect(splitMessage("hello", 2000)).toEqual(["hello"]);
  });

  it("splits on line boundaries first, then words", () => {
    const lines = Array.from({ length: 60 }, (_, i) => `line ${i} ${"abc ".repeat(10)}`.trim());
    const parts = splitMessage(lines.join("\n"), 500);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(500);
      // Every part ends at the end of a source line.
      expect(lines).toContain(part.split("\n").at(-1));
    }
    const words = "word ".repeat(300).trim();
    for (const part of splitMessage(words, 100)) expect(part).toMatch(/^(word ?)+$/);
  });

  it("closes and reopens a code fence cut by the split", () => {
    const code = ["```ts", ...Array.from({ length: 80 }, (_, i) => `const value${i} = ${i};`), "```"].join("\n");
    const parts = splitMessage(`Here is code:\n${code}`, 400);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(400);
      expect((part.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(parts[1].startsWith("```ts\n")).toBe(true);
  });

  it("never exceeds the limit, never loses non-space text, never splits a surrogate pair", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("a", "b", " ", "\n", "😀", "é"), maxLength: 3000, size: "max" }),
        fc.integer({ min: 16, max: 400 }),
        (text, max) => {
          const parts = splitMessage(text, max);
          const fits = parts.every((part) => part.length <= max);
          const wholePairs = parts.every((part) => !/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(part));
          return fits && wholePairs && squash(parts.join("")) === squash(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("keeps fences balanced in every part but the last, within the limit", () => {
    const fenceLines = (part: string) => part.split("\n").filter((line) => line.trimStart().startsWith("```")).length;
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("a", " ", "\n", "```", "```py\n", "😀"), maxLength: 3000, size: "max" }),
        fc.integer({ min: 16, max: 400 }),
        (text, max) => {
          const parts = splitMessage(text, max);
          return parts.every(
            (part, index) => part.length <= max && (index === parts.length - 1 || fenceLines(part) % 2 === 0),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
