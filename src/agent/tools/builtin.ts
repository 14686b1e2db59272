// Built-in tools: read-only and side-effect free, safe to offer any model.
import { z } from "zod";
import { ToolRegistry, type ZodTool } from "./registry.js";

const currentTimeArgs = z
  .object({
    timezone: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe("An IANA time zone such as Europe/Paris; UTC when omitted."),
  })
  .strict();

export const getCurrentTimeTool: ZodTool<typeof currentTimeArgs> = {
  name: "get_current_time",
  description: "The current date and time, in UTC or in a given IANA time zone.",
  schema: currentTimeArgs,
  handler: ({ timezone }) => {
    const zone = timezone ?? "UTC";
    const now = new Date();
    // Throws a RangeError for an unknown zone: the model gets it as the tool's error.
    const local = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      dateStyle: "full",
      timeStyle: "long",
    }).format(now);
    return { iso: now.toISOString(), timezone: zone, local, epoch_seconds: Math.floor(now.getTime() / 1000) };
  },
};

/** A registry with every built-in tool. */
export function createBuiltinTools(): ToolRegistry {
  return new ToolRegistry().register(getCurrentTimeTool);
}
