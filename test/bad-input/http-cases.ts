// The HTTP half of the bad-input corpus: one row per case, each with the status a client should
// get. A few cases accept two statuses where both are right (404 or 405 for a wrong method);
// none accepts a 2xx or a 5xx.
import { gzipSync } from "node:zlib";
import { TOKEN_COOKIE } from "../../src/clients/auth.js";
import {
  API_KEY,
  discordHeaders,
  githubHeaders,
  MAX_MESSAGE_CHARS,
  nowSeconds,
  slackHeaders,
  standardHeaders,
  strangerKeys,
  TELEGRAM_SECRET,
  WHATSAPP_PHONE_NUMBER_ID,
  WHATSAPP_VERIFY_TOKEN,
  whatsappHeaders,
} from "./keys.js";

export interface HttpCase {
  name: string;
  method: string;
  /** Sent verbatim. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The right status, or the equally right ones. */
  status: number | number[];
}

const json = { "content-type": "application/json" };
const auth = { authorization: `Bearer ${API_KEY}` };
const api = { ...json, ...auth };
const chat = (body: unknown): string => JSON.stringify(body);
const goodChat = chat({ model: "echo", messages: [{ role: "user", content: "hello" }] });
/** Bigger than the 1 MiB default body limit. */
const huge = (prefix: string, suffix: string): string => `${prefix}${"x".repeat(2 * 1024 * 1024)}${suffix}`;
const hugeChat = huge('{"model":"echo","messages":[{"role":"user","content":"', '"}]}');
const longText = "y".repeat(MAX_MESSAGE_CHARS + 1);
const deepJson = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
const slackEvent = JSON.stringify({
  type: "event_callback",
  team_id: "T0CORPUS",
  event_id: "Ev0CORPUS1",
  event: { type: "app_mention", user: "U0USER", text: "<@U0BOT> hi", ts: "1700000000.000100", channel: "C0CORPUS" },
});
const telegramUpdate = JSON.stringify({
  update_id: 812_000_001,
  message: { message_id: 5, date: 1_760_000_000, chat: { id: 42, type: "private" }, from: { id: 42, is_bot: false, first_name: "Ada" }, text: "hi" },
});
const telegramSecret = { "x-telegram-bot-api-secret-token": TELEGRAM_SECRET };
const discordPing = JSON.stringify({ id: "1", application_id: "2", type: 1, token: "t" });
const hook = (fields: Record<string, unknown>): string => JSON.stringify({ id: `corpus-${Math.random().toString(36).slice(2)}`, chat_id: "c1", user_id: "u1", text: "hi", ...fields });
const waMessage = (fields: Record<string, unknown>): Record<string, unknown> => ({ from: "16505551234", id: `wamid.corpus${Math.random().toString(36).slice(2)}`, type: "text", text: { body: "hi" }, ...fields });
const waBody = (messages: unknown, value: Record<string, unknown> = {}): string =>
  JSON.stringify({
    object: "whatsapp_business_account",
    entry: [{ id: "1", changes: [{ field: "messages", value: { messaging_product: "whatsapp", metadata: { phone_number_id: WHATSAPP_PHONE_NUMBER_ID }, messages, ...value } }] }],
  });
const verify = (query: Record<string, string>): string => `/whatsapp/webhook?${new URLSearchParams(query)}`;
const tenMinutesAgo = (): string => String(nowSeconds() - 600);

export function httpCases(): HttpCase[] {
  const slackStale = tenMinutesAgo();
  const discordTs = String(nowSeconds());
  const validPing = discordHeaders(discordPing, discordTs);
  const forgedSig = "ab".repeat(64);
  const ghBody = hook({});
  const waGood = waBody([waMessage({})]);
  const waSigned = (body: string) => ({ ...json, ...whatsappHeaders(body) });
  const stdBody = hook({});
  return [
    // ---- POST /v1/chat/completions ----
    { name: "chat: no API key", method: "POST", path: "/v1/chat/completions", headers: json, body: goodChat, status: 401 },
    { name: "chat: wrong API key", method: "POST", path: "/v1/chat/completions", headers: { ...json, authorization: "Bearer nope" }, body: goodChat, status: 401 },
    { name: "chat: Basic auth instead of a bearer token", method: "POST", path: "/v1/chat/completions", headers: { ...json, authorization: `Basic ${Buffer.from(`u:${API_KEY}`).toString("base64")}` }, body: goodChat, status: 401 },
    { name: "chat: malformed JSON", method: "POST", path: "/v1/chat/completions", headers: api, body: '{"model":"echo","messages":[', status: 400 },
    { name: "chat: body is a JSON array", method: "POST", path: "/v1/chat/completions", headers: api, body: "[]", status: 400 },
    { name: "chat: body is a JSON string", method: "POST", path: "/v1/chat/completions", headers: api, body: '"hello"', status: 400 },
    { name: "chat: empty body", method: "POST", path: "/v1/chat/completions", headers: api, body: "", status: 400 },
    { name: "chat: messages missing", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo" }), status: 400 },
    { name: "chat: messages is a string", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: "hello" }), status: 400 },
    { name: "chat: messages empty", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: [] }), status: 400 },
    { name: "chat: unknown role", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: [{ role: "wizard", content: "hi" }] }), status: 400 },
    { name: "chat: content is a number", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: [{ role: "user", content: 42 }] }), status: 400 },
    { name: "chat: content parts that are not text", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x/y.png" } }] }] }), status: 400 },
    { name: "chat: no user message", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: [{ role: "system", content: "be nice" }] }), status: 400 },
    { name: "chat: model missing", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ messages: [{ role: "user", content: "hi" }] }), status: 400 },
    { name: "chat: stream is a string", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", stream: "yes", messages: [{ role: "user", content: "hi" }] }), status: 400 },
    { name: "chat: text longer than the message limit", method: "POST", path: "/v1/chat/completions", headers: api, body: chat({ model: "echo", messages: [{ role: "user", content: longText }] }), status: [400, 413] },
    { name: "chat: body over the size limit", method: "POST", path: "/v1/chat/completions", headers: api, body: hugeChat, status: 413 },
    { name: "chat: 100,000-deep nested JSON", method: "POST", path: "/v1/chat/completions", headers: api, body: deepJson, status: 400 },
    { name: "chat: text/plain body", method: "POST", path: "/v1/chat/completions", headers: { ...auth, "content-type": "text/plain" }, body: goodChat, status: [400, 415] },
    { name: "chat: unsupported charset", method: "POST", path: "/v1/chat/completions", headers: { ...auth, "content-type": "application/json; charset=iso-8859-1" }, body: goodChat, status: 415 },
    { name: "chat: corrupt gzip body", method: "POST", path: "/v1/chat/completions", headers: { ...api, "content-encoding": "gzip" }, body: "this is not gzip", status: 400 },
    { name: "chat: gzip bomb over the size limit", method: "POST", path: "/v1/chat/completions", headers: { ...api, "content-encoding": "gzip" }, body: gzipSync(Buffer.from(hugeChat)), status: 413 },
    { name: "chat: X-Session-Id with ../", method: "POST", path: "/v1/chat/completions", headers: { ...api, "x-session-id": "../../etc/passwd" }, body: goodChat, status: 400 },
    { name: "chat: X-Session-Id with an encoded slash", method: "POST", path: "/v1/chat/completions", headers: { ...api, "x-session-id": "a%2Fb" }, body: goodChat, status: 400 },
    { name: "chat: overlong X-Session-Id", method: "POST", path: "/v1/chat/completions", headers: { ...api, "x-session-id": "s".repeat(129) }, body: goodChat, status: 400 },
    { name: "chat: overlong Idempotency-Key", method: "POST", path: "/v1/chat/completions", headers: { ...api, "idempotency-key": "k".repeat(300) }, body: goodChat, status: 400 },
    { name: "chat: the right key in ?token=", method: "POST", path: `/v1/chat/completions?token=${API_KEY}`, headers: json, body: goodChat, status: 401 },
    { name: "chat: from another site's page", method: "POST", path: "/v1/chat/completions", headers: { ...api, origin: "https://evil.example" }, body: goodChat, status: 403 },
    { name: "chat: GET instead of POST", method: "GET", path: "/v1/chat/completions", headers: auth, status: [404, 405] },

    // ---- /v1/models ----
    { name: "models: no API key", method: "GET", path: "/v1/models", status: 401 },
    { name: "models: unknown model id", method: "GET", path: "/v1/models/gpt-nonexistent", headers: auth, status: 404 },
    { name: "models: encoded traversal in the model id", method: "GET", path: "/v1/models/..%2F..%2Fapi%2Fsessions", headers: auth, status: 404 },
    { name: "models: POST", method: "POST", path: "/v1/models", headers: api, body: "{}", status: [404, 405] },

    // ---- /api/sessions ----
    { name: "sessions: no API key", method: "GET", path: "/api/sessions", status: 401 },
    { name: "sessions: wrong API key in the query", method: "GET", path: "/api/sessions?token=nope", status: 401 },
    { name: "sessions: unknown session id", method: "GET", path: "/api/sessions/no-such-session/messages", headers: auth, status: 404 },
    { name: "sessions: encoded ../ in the id", method: "GET", path: "/api/sessions/..%2F..%2Fetc%2Fpasswd/messages", headers: auth, status: [400, 404] },
    { name: "sessions: %2e%2e as the id", method: "GET", path: "/api/sessions/%2e%2e/messages", headers: auth, status: [400, 404] },
    { name: "sessions: raw ../ climbing to another route", method: "GET", path: "/api/sessions/../../v1/models", headers: auth, status: [400, 404] },
    { name: "sessions: overlong id", method: "GET", path: `/api/sessions/${"i".repeat(5000)}/messages`, headers: auth, status: [400, 404, 414] },
    { name: "sessions: NUL byte in the id", method: "GET", path: "/api/sessions/abc%00def/messages", headers: auth, status: [400, 404] },
    { name: "sessions: malformed percent-encoding", method: "GET", path: "/api/sessions/%E0%A4%A/messages", headers: auth, status: 400 },
    { name: "sessions: DELETE", method: "DELETE", path: "/api/sessions/no-such-session", headers: auth, status: [404, 405] },
    { name: "sessions: the right key in ?token= (only /ws and the admin redirect read it)", method: "GET", path: `/api/sessions?token=${API_KEY}`, status: 401 },
    { name: "sessions: malformed percent-encoding in the admin cookie", method: "GET", path: "/api/sessions", headers: { cookie: `${TOKEN_COOKIE}=%E0%A4%A` }, status: 401 },
    ...["-1", "0", "1.5", "1001", "1e3", "abc", "", "99999999999999999999"].map((limit) => ({
      name: `sessions: limit=${limit || "(empty)"}`, method: "GET", path: `/api/sessions?limit=${limit}`, headers: auth, status: 400,
    })),
    { name: "sessions: limit given twice", method: "GET", path: "/api/sessions?limit=1&limit=2", headers: auth, status: 400 },
    { name: "interrupt: no API key", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: json, body: "{}", status: 401 },
    { name: "interrupt: unknown session", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: api, body: "{}", status: 404 },
    { name: "interrupt: malformed JSON", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: api, body: "{hard:", status: 400 },
    { name: "interrupt: hard is a string", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: api, body: '{"hard":"yes"}', status: 400 },
    { name: "interrupt: text is a number", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: api, body: '{"text":5}', status: 400 },
    { name: "interrupt: unknown field", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: api, body: '{"hard":true,"rm":"-rf"}', status: 400 },
    { name: "interrupt: text/plain body (a cross-site simple request)", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: { ...auth, "content-type": "text/plain" }, body: "{}", status: 415 },
    { name: "interrupt: form body", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: { ...auth, "content-type": "application/x-www-form-urlencoded" }, body: "hard=true", status: 415 },
    { name: "interrupt: no body and no content type", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: auth, status: 415 },
    { name: "interrupt: from another site's page", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: { ...api, origin: "https://evil.example" }, body: "{}", status: 403 },
    { name: "interrupt: from a sandboxed page (Origin: null)", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: { ...api, origin: "null" }, body: "{}", status: 403 },
    { name: "interrupt: body over the size limit", method: "POST", path: "/api/sessions/no-such-session/interrupt", headers: api, body: huge('{"text":"', '"}'), status: 413 },

    // ---- POST /slack/events, /slack/commands ----
    { name: "slack: no signature headers", method: "POST", path: "/slack/events", headers: json, body: slackEvent, status: 401 },
    { name: "slack: forged signature", method: "POST", path: "/slack/events", headers: { ...json, "x-slack-request-timestamp": String(nowSeconds()), "x-slack-signature": `v0=${"0".repeat(64)}` }, body: slackEvent, status: 401 },
    { name: "slack: signed with another secret", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders(slackEvent, undefined, "not-the-secret") }, body: slackEvent, status: 401 },
    { name: "slack: replayed (10-minute-old timestamp, signature valid for it)", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders(slackEvent, slackStale) }, body: slackEvent, status: 401 },
    { name: "slack: timestamp 10 minutes in the future", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders(slackEvent, String(nowSeconds() + 600)) }, body: slackEvent, status: 401 },
    { name: "slack: timestamp not a number", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders(slackEvent, "now") }, body: slackEvent, status: 401 },
    { name: "slack: signature over another body", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders("{}") }, body: slackEvent, status: 401 },
    { name: "slack: v1 signature scheme", method: "POST", path: "/slack/events", headers: { ...json, "x-slack-request-timestamp": String(nowSeconds()), "x-slack-signature": slackHeaders(slackEvent)["x-slack-signature"].replace("v0=", "v1=") }, body: slackEvent, status: 401 },
    { name: "slack: signed malformed JSON", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders('{"type":') }, body: '{"type":', status: 400 },
    { name: "slack: signed JSON without a type", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders('{"token":"x"}') }, body: '{"token":"x"}', status: 400 },
    { name: "slack: signed JSON array", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders("[]") }, body: "[]", status: 400 },
    { name: "slack: url_verification without a challenge", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders('{"type":"url_verification"}') }, body: '{"type":"url_verification"}', status: 400 },
    { name: "slack: body over the size limit", method: "POST", path: "/slack/events", headers: { ...json, ...slackHeaders(huge('{"type":"', '"}')) }, body: huge('{"type":"', '"}'), status: 413 },
    { name: "slack commands: forged signature", method: "POST", path: "/slack/commands", headers: { "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": String(nowSeconds()), "x-slack-signature": `v0=${"1".repeat(64)}` }, body: "command=%2Fask&text=hi", status: 401 },
    { name: "slack commands: signed but no command fields", method: "POST", path: "/slack/commands", headers: { "content-type": "application/x-www-form-urlencoded", ...slackHeaders("foo=bar") }, body: "foo=bar", status: 400 },

    // ---- POST /discord/interactions ----
    { name: "discord: no signature headers", method: "POST", path: "/discord/interactions", headers: json, body: discordPing, status: 401 },
    { name: "discord: signature not hex", method: "POST", path: "/discord/interactions", headers: { ...json, "x-signature-ed25519": "zz".repeat(64), "x-signature-timestamp": discordTs }, body: discordPing, status: 401 },
    { name: "discord: forged signature of the right length", method: "POST", path: "/discord/interactions", headers: { ...json, "x-signature-ed25519": forgedSig, "x-signature-timestamp": discordTs }, body: discordPing, status: 401 },
    { name: "discord: signed by another key", method: "POST", path: "/discord/interactions", headers: { ...json, ...discordHeaders(discordPing, discordTs, strangerKeys.privateKey) }, body: discordPing, status: 401 },
    { name: "discord: valid signature, body changed", method: "POST", path: "/discord/interactions", headers: { ...json, ...validPing }, body: discordPing.replace('"type":1', '"type":2'), status: 401 },
    { name: "discord: valid signature replayed with a new timestamp", method: "POST", path: "/discord/interactions", headers: { ...json, ...validPing, "x-signature-timestamp": String(Number(discordTs) + 1) }, body: discordPing, status: 401 },
    { name: "discord: signed malformed JSON", method: "POST", path: "/discord/interactions", headers: { ...json, ...discordHeaders("{nope") }, body: "{nope", status: 400 },
    { name: "discord: signed interaction without its fields", method: "POST", path: "/discord/interactions", headers: { ...json, ...discordHeaders('{"type":2}') }, body: '{"type":2}', status: 400 },
    { name: "discord: body over the size limit", method: "POST", path: "/discord/interactions", headers: { ...json, ...discordHeaders(huge('{"id":"', '"}')) }, body: huge('{"id":"', '"}'), status: 413 },

    // ---- POST /telegram/webhook ----
    { name: "telegram: no secret token header", method: "POST", path: "/telegram/webhook", headers: json, body: telegramUpdate, status: 401 },
    { name: "telegram: wrong secret token", method: "POST", path: "/telegram/webhook", headers: { ...json, "x-telegram-bot-api-secret-token": "corpus-telegram-secret_02" }, body: telegramUpdate, status: 401 },
    { name: "telegram: secret token in another case", method: "POST", path: "/telegram/webhook", headers: { ...json, "x-telegram-bot-api-secret-token": TELEGRAM_SECRET.toUpperCase() }, body: telegramUpdate, status: 401 },
    { name: "telegram: secret token as a prefix of the real one", method: "POST", path: "/telegram/webhook", headers: { ...json, "x-telegram-bot-api-secret-token": TELEGRAM_SECRET.slice(0, -1) }, body: telegramUpdate, status: 401 },
    { name: "telegram: empty secret token", method: "POST", path: "/telegram/webhook", headers: { ...json, "x-telegram-bot-api-secret-token": "" }, body: telegramUpdate, status: 401 },
    { name: "telegram: secret token in the query string", method: "POST", path: `/telegram/webhook?secret_token=${TELEGRAM_SECRET}`, headers: json, body: telegramUpdate, status: 401 },
    { name: "telegram: secret token as a bearer token", method: "POST", path: "/telegram/webhook", headers: { ...json, authorization: `Bearer ${TELEGRAM_SECRET}` }, body: telegramUpdate, status: 401 },
    { name: "telegram: malformed JSON", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: '{"update_id":', status: 400 },
    { name: "telegram: JSON array", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: `[${telegramUpdate}]`, status: 400 },
    { name: "telegram: update_id missing", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: JSON.stringify({ message: JSON.parse(telegramUpdate).message }), status: 400 },
    { name: "telegram: update_id is a string", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: telegramUpdate.replace("812000001", '"812000001"'), status: 400 },
    { name: "telegram: negative update_id", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: telegramUpdate.replace("812000001", "-1"), status: 400 },
    { name: "telegram: chat id is a string", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: telegramUpdate.replace('"id":42,"type"', '"id":"42","type"'), status: 400 },
    { name: "telegram: text is an object", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: telegramUpdate.replace('"text":"hi"', '"text":{"$ne":""}'), status: 400 },
    { name: "telegram: body over the size limit", method: "POST", path: "/telegram/webhook", headers: { ...json, ...telegramSecret }, body: huge('{"update_id":1,"message":{"text":"', '"}}'), status: 413 },
    { name: "telegram: GET", method: "GET", path: "/telegram/webhook", status: [404, 405] },

    // ---- POST /webhooks/:route ----
    { name: "webhook: unknown route", method: "POST", path: "/webhooks/nope", headers: { ...json, ...githubHeaders(ghBody) }, body: ghBody, status: 404 },
    { name: "webhook: no signature", method: "POST", path: "/webhooks/gh", headers: json, body: ghBody, status: 401 },
    { name: "webhook: forged signature", method: "POST", path: "/webhooks/gh", headers: { ...json, "x-hub-signature-256": `sha256=${"0".repeat(64)}` }, body: ghBody, status: 401 },
    { name: "webhook: signed with another secret", method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders(ghBody, undefined, "wrong") }, body: ghBody, status: 401 },
    { name: "webhook: sha1 signature scheme", method: "POST", path: "/webhooks/gh", headers: { ...json, "x-hub-signature-256": githubHeaders(ghBody)["x-hub-signature-256"].replace("sha256=", "sha1=") }, body: ghBody, status: 401 },
    { name: "webhook: signature over another body", method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders(hook({ text: "other" })) }, body: ghBody, status: 401 },
    { name: "webhook: signed malformed JSON", method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders('{"id":') }, body: '{"id":', status: 400 },
    { name: "webhook: signed JSON array", method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders("[1,2]") }, body: "[1,2]", status: 400 },
    ...(
      [
        ["text missing", { text: undefined }],
        ["text is a number", { text: 7 }],
        ["text is only whitespace", { text: "   \n\t" }],
        ["chat_id is an object", { chat_id: { $gt: "" } }],
        ["user_id missing", { user_id: undefined }],
      ] as const
    ).map(([what, fields]) => {
      const body = hook(fields);
      return { name: `webhook: signed, ${what}`, method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders(body) }, body, status: 400 };
    }),
    (() => {
      const body = hook({ text: longText });
      return { name: "webhook: signed, text longer than the message limit", method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders(body) }, body, status: [400, 413] };
    })(),
    { name: "webhook: body over the size limit", method: "POST", path: "/webhooks/gh", headers: { ...json, ...githubHeaders(huge('{"text":"', '"}')) }, body: huge('{"text":"', '"}'), status: 413 },
    { name: "webhook (standard): signature headers missing", method: "POST", path: "/webhooks/std", headers: json, body: stdBody, status: 401 },
    { name: "webhook (standard): replayed, 10-minute-old timestamp", method: "POST", path: "/webhooks/std", headers: { ...json, ...standardHeaders(stdBody, "msg_replay", tenMinutesAgo()) }, body: stdBody, status: 401 },
    { name: "webhook (standard): timestamp not a number", method: "POST", path: "/webhooks/std", headers: { ...json, ...standardHeaders(stdBody, "msg_bad_ts", "soon") }, body: stdBody, status: 401 },
    { name: "webhook (standard): v2 signature scheme", method: "POST", path: "/webhooks/std", headers: { ...json, ...standardHeaders(stdBody, "msg_v2"), "webhook-signature": standardHeaders(stdBody, "msg_v2")["webhook-signature"].replace("v1,", "v2,") }, body: stdBody, status: 401 },
    { name: "webhook (standard): signature for another message id", method: "POST", path: "/webhooks/std", headers: { ...json, ...standardHeaders(stdBody, "msg_a"), "webhook-id": "msg_b" }, body: stdBody, status: 401 },
    { name: "webhook: encoded ../ in the route name", method: "POST", path: "/webhooks/..%2Fv1%2Fchat%2Fcompletions", headers: { ...json, ...githubHeaders(ghBody) }, body: ghBody, status: [400, 404] },
    { name: "webhook: %2e%2e as the route name", method: "POST", path: "/webhooks/%2e%2e", headers: { ...json, ...githubHeaders(ghBody) }, body: ghBody, status: [400, 404] },
    { name: "webhook: NUL byte after the route name", method: "POST", path: "/webhooks/gh%00", headers: { ...json, ...githubHeaders(ghBody) }, body: ghBody, status: [400, 404] },
    { name: "webhook: overlong route name", method: "POST", path: `/webhooks/${"r".repeat(5000)}`, headers: { ...json, ...githubHeaders(ghBody) }, body: ghBody, status: [400, 404, 414] },
    { name: "webhook: raw ../ climbing to the API", method: "POST", path: "/webhooks/gh/../../v1/chat/completions", headers: json, body: goodChat, status: [401, 404] },
    { name: "webhook: GET", method: "GET", path: "/webhooks/gh", status: [404, 405] },

    // ---- GET/POST /whatsapp/webhook ----
    { name: "whatsapp verify: wrong verify token", method: "GET", path: verify({ "hub.mode": "subscribe", "hub.verify_token": "nope", "hub.challenge": "1" }), status: 403 },
    { name: "whatsapp verify: no verify token", method: "GET", path: verify({ "hub.mode": "subscribe", "hub.challenge": "1" }), status: 403 },
    { name: "whatsapp verify: mode is not subscribe", method: "GET", path: verify({ "hub.mode": "unsubscribe", "hub.verify_token": WHATSAPP_VERIFY_TOKEN, "hub.challenge": "1" }), status: 403 },
    { name: "whatsapp verify: the token twice, the second one right", method: "GET", path: `/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=nope&hub.verify_token=${WHATSAPP_VERIFY_TOKEN}&hub.challenge=1`, status: 403 },
    { name: "whatsapp verify: no challenge", method: "GET", path: verify({ "hub.mode": "subscribe", "hub.verify_token": WHATSAPP_VERIFY_TOKEN }), status: 400 },
    { name: "whatsapp verify: overlong challenge", method: "GET", path: verify({ "hub.mode": "subscribe", "hub.verify_token": WHATSAPP_VERIFY_TOKEN, "hub.challenge": "9".repeat(5000) }), status: [400, 414] },
    { name: "whatsapp: no signature", method: "POST", path: "/whatsapp/webhook", headers: json, body: waGood, status: 401 },
    { name: "whatsapp: forged signature", method: "POST", path: "/whatsapp/webhook", headers: { ...json, "x-hub-signature-256": `sha256=${"0".repeat(64)}` }, body: waGood, status: 401 },
    { name: "whatsapp: signed with another secret", method: "POST", path: "/whatsapp/webhook", headers: { ...json, ...whatsappHeaders(waGood, "not-the-app-secret") }, body: waGood, status: 401 },
    { name: "whatsapp: sha1 signature scheme", method: "POST", path: "/whatsapp/webhook", headers: { ...json, "x-hub-signature-256": whatsappHeaders(waGood)["x-hub-signature-256"].replace("sha256=", "sha1=") }, body: waGood, status: 401 },
    { name: "whatsapp: bare hex without sha256=", method: "POST", path: "/whatsapp/webhook", headers: { ...json, "x-hub-signature-256": whatsappHeaders(waGood)["x-hub-signature-256"].slice("sha256=".length) }, body: waGood, status: 401 },
    { name: "whatsapp: signature over another body", method: "POST", path: "/whatsapp/webhook", headers: waSigned(waBody([waMessage({ text: { body: "other" } })])), body: waGood, status: 401 },
    { name: "whatsapp: signed malformed JSON", method: "POST", path: "/whatsapp/webhook", headers: waSigned('{"object":'), body: '{"object":', status: 400 },
    { name: "whatsapp: signed JSON array", method: "POST", path: "/whatsapp/webhook", headers: waSigned("[]"), body: "[]", status: 400 },
    { name: "whatsapp: signed, no entry", method: "POST", path: "/whatsapp/webhook", headers: waSigned('{"object":"whatsapp_business_account"}'), body: '{"object":"whatsapp_business_account"}', status: 400 },
    ...(
      [
        ["message without an id", [waMessage({ id: undefined })]],
        ["message without a sender", [waMessage({ from: undefined })]],
        ["sender is a number", [waMessage({ from: 16505551234 })]],
        ["text body is an object", [waMessage({ text: { body: { $ne: "" } } })]],
        ["messages is an object", { "0": waMessage({}) }],
      ] as const
    ).map(([what, messages]) => {
      const body = waBody(messages);
      return { name: `whatsapp: signed, ${what}`, method: "POST", path: "/whatsapp/webhook", headers: waSigned(body), body, status: 400 };
    }),
    (() => {
      const body = waBody([], { statuses: [{ id: "wamid.x", status: 5 }] });
      return { name: "whatsapp: signed, status is a number", method: "POST", path: "/whatsapp/webhook", headers: waSigned(body), body, status: 400 };
    })(),
    { name: "whatsapp: body over the size limit", method: "POST", path: "/whatsapp/webhook", headers: { ...json, ...whatsappHeaders(huge('{"object":"', '"}')) }, body: huge('{"object":"', '"}'), status: 413 },
    { name: "whatsapp: PUT", method: "PUT", path: "/whatsapp/webhook", headers: json, body: "{}", status: [404, 405] },

    // ---- /health and the rest of the tree ----
    { name: "health: POST", method: "POST", path: "/health", headers: json, body: "{}", status: [404, 405] },
    { name: "health: raw ../ climbing to the API", method: "GET", path: "/health/../v1/models", status: [401, 404] },
    { name: "upper-case /V1/MODELS without a key", method: "GET", path: "/V1/MODELS", status: [401, 404] },
    { name: "double slash //v1/models without a key", method: "GET", path: "//v1/models", status: [401, 404] },
    { name: "encoded ../ at the root", method: "GET", path: "/%2e%2e/%2e%2e/etc/passwd", status: [400, 404] },
    { name: "queue dashboard without a key", method: "GET", path: "/admin/queues", status: 401 },
    { name: "queue dashboard: malformed admin cookie", method: "GET", path: "/admin/queues", headers: { cookie: `${TOKEN_COOKIE}=%E0%A4%A` }, status: 401 },
    { name: "queue dashboard API: the right key in ?token= (only the page's redirect reads it)", method: "GET", path: `/admin/queues/api/queues?token=${API_KEY}`, status: 401 },
    { name: "queue dashboard API: a job action from another site's page", method: "PUT", path: "/admin/queues/api/queues/turns/retry/failed", headers: { ...auth, origin: "https://evil.example" }, status: 403 },
    { name: "unknown path", method: "GET", path: "/no/such/route", status: 404 },
  ];
}
