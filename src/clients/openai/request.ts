// The OpenAI-compatible chat completion request: validation with errors that name the bad field,
// and the headers that address a session (X-Session-Id) and dedupe retries (Idempotency-Key).
import { z } from "zod";
import type { HttpErrorCode } from "../../shared/error-catalogue.js";

const textPart = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
});

const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({
    url: z.string().min(1),
    detail: z.enum(["auto", "low", "high"]).optional(),
  }),
});

const content = z.union([z.string(), z.array(z.union([textPart, imagePart]))], {
  error: "must be a string or an array of content parts ({\"type\":\"text\",\"text\":...} or {\"type\":\"image_url\",\"image_url\":{\"url\":...}})",
});

const ROLES = ["system", "developer", "user", "assistant", "tool"] as const;

const message = z.looseObject({
  role: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }),
  // Assistant messages that only carry tool calls have no content; they are tolerated and skipped.
  content: content.nullable().optional(),
});

/** Known fields are checked; the others (temperature, top_p, tools, ...) are tolerated and ignored. */
const chatCompletionBody = z
  .looseObject({
    model: z.string({ error: "is required and must be a string" }).min(1, { error: "must not be empty" }),
    messages: z.array(message, { error: "is required and must be an array" }).min(1, { error: "must hold at least one message" }),
    stream: z.boolean({ error: "must be a boolean" }).nullable().optional(),
    stream_options: z
      .looseObject({ include_usage: z.boolean({ error: "must be a boolean" }).nullable().optional() })
      .nullable()
      .optional(),
    user: z.string({ error: "must be a string" }).optional(),
  })
  .superRefine((body, ctx) => {
    body.messages.forEach((m, i) => {
      if ((m.role === "user" || m.role === "system" || m.role === "developer") && (m.content === null || m.content === undefined)) {
        ctx.addIssue({ code: "custom", path: ["messages", i, "content"], message: `is required for a ${m.role} message` });
      }
      if (m.role !== "user" && Array.isArray(m.content) && m.content.some((part) => part.type === "image_url")) {
        ctx.addIssue({ code: "custom", path: ["messages", i, "content"], message: "image parts are only allowed in user messages" });
      }
    });
    if (!body.messages.some((m) => m.role === "user")) {
      ctx.addIssue({ code: "custom", path: ["messages"], message: "must contain a user message (the last one is the new input)" });
    }
  });

export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;
type RequestMessage = ChatCompletionBody["messages"][number];

export interface SeedMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** What a valid request asks for. */
export interface ChatRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  userId: string | null;
  /** The last user message: the new input. */
  input: string;
  /** The image URLs (data: or https:) of the last user message, in order. */
  imageUrls: string[];
  /** The messages before it, for seeding a fresh session (tool messages and empty turns left out). */
  history: SeedMessage[];
}

export class RequestError extends Error {
  constructor(
    readonly code: HttpErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "RequestError";
  }
}

/** `messages[2].content` from a zod path. */
function fieldName(path: ReadonlyArray<PropertyKey>): string {
  let name = "";
  for (const key of path) name += typeof key === "number" ? `[${key}]` : `${name ? "." : ""}${String(key)}`;
  return name || "body";
}

export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new RequestError("invalid_body", "request body must be a JSON object (send Content-Type: application/json)");
  }
  const parsed = chatCompletionBody.safeParse(body);
  if (!parsed.success) {
    const details = parsed.error.issues.slice(0, 5).map((issue) => `${fieldName(issue.path)}: ${issue.message}`);
    throw new RequestError("invalid_body", `invalid request body: ${details.join("; ")}`);
  }
  const data = parsed.data;
  const lastUser = data.messages.map((m) => m.role).lastIndexOf("user");
  return {
    model: data.model,
    stream: data.stream === true,
    includeUsage: data.stream_options?.include_usage === true,
    userId: data.user ?? null,
    input: textOf(data.messages[lastUser]),
    imageUrls: imageUrlsOf(data.messages[lastUser]),
    history: data.messages.slice(0, lastUser).flatMap(seedOf),
  };
}

function textOf(m: RequestMessage): string {
  if (m.content === null || m.content === undefined) return "";
  if (typeof m.content === "string") return m.content;
  return m.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
}

function imageUrlsOf(m: RequestMessage): string[] {
  if (!Array.isArray(m.content)) return [];
  return m.content.flatMap((part) => (part.type === "image_url" ? [part.image_url.url] : []));
}

function seedOf(m: RequestMessage): SeedMessage[] {
  const text = textOf(m);
  if (m.role === "tool" || text === "") return [];
  return [{ role: m.role === "developer" ? "system" : m.role, content: text }];
}

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const IDEMPOTENCY_KEY = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

/** The X-Session-Id header: undefined when absent; a RequestError when malformed. */
export function sessionIdHeader(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!SESSION_ID.test(value)) {
    throw new RequestError("invalid_session_id", "X-Session-Id must be 1-128 characters of letters, digits, '.', '_', ':' and '-'");
  }
  return value;
}

/** The Idempotency-Key header: undefined when absent; a RequestError when malformed. */
export function idempotencyKeyHeader(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(value)) {
    throw new RequestError("invalid_idempotency_key", "Idempotency-Key must be 1-255 printable ASCII characters");
  }
  return value;
}
