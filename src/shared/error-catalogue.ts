// Every error code the gateway answers with, in one place: the HTTP errors (JSON
// `{"error":{"message","type","code"}}`, also the body of a refused WebSocket upgrade) and the
// error frames of an open WebSocket. Codes are part of the wire format: clients branch on them, so
// a code keeps its status and its meaning. The helpers that write errors take only codes listed
// here, so a code that is not in the catalogue does not compile.
//
// A message here is the default: a caller that knows more (which field, which session, how long
// to wait) answers with its own.

interface HttpErrorSpec {
  readonly status: number;
  readonly message: string;
}

export const HTTP_ERRORS = {
  // Any route
  /** A request the body parser or the router refused; answered with that error's own 4xx status. */
  bad_request: { status: 400, message: "bad request" },
  malformed_json: { status: 400, message: "request body is not valid JSON" },
  json_too_deep: { status: 400, message: "request body nests arrays and objects deeper than allowed" },
  body_too_large: { status: 413, message: "request body is larger than the configured limit" },
  unsupported_media_type: { status: 415, message: "send the body as Content-Type: application/json" },
  not_found: { status: 404, message: "no such route" },
  internal_error: { status: 500, message: "internal server error" },

  // The browser rules, the API key and the WebSocket hub's caps
  host_not_allowed: { status: 421, message: "this gateway answers only its loopback host names and ALLOWED_HOSTS" },
  origin_not_allowed: { status: 403, message: "requests from this origin are not allowed; see ALLOWED_ORIGINS" },
  missing_api_key: { status: 401, message: "missing API key: send Authorization: Bearer <key>" },
  invalid_api_key: { status: 401, message: "invalid API key" },
  /** A WebSocket upgrade without a valid key (HTTP routes say missing_api_key or invalid_api_key). */
  unauthorized: { status: 401, message: "missing or invalid API key" },
  too_many_failed_keys: { status: 429, message: "too many wrong API keys from this address" },
  too_many_connections: { status: 503, message: "too many WebSocket connections" },
  /** A WebSocket upgrade while the hub is closing. */
  unavailable: { status: 503, message: "the gateway is stopping; connect again later" },

  // The API: /v1 and /api
  invalid_body: { status: 400, message: "invalid request body" },
  invalid_limit: { status: 400, message: "limit must be a whole number within the allowed range" },
  invalid_query: { status: 400, message: "a query parameter is not valid" },
  invalid_session_id: { status: 400, message: "X-Session-Id must be 1-128 characters of letters, digits, '.', '_', ':' and '-'" },
  invalid_idempotency_key: { status: 400, message: "Idempotency-Key must be 1-255 printable ASCII characters" },
  session_not_found: { status: 404, message: "no such session" },
  /** X-Session-Id names a chat platform's session: the API writes only to API and WebSocket sessions. */
  session_not_addressable: { status: 403, message: "this session belongs to a chat platform; send to API or WebSocket sessions only" },
  attachment_not_found: { status: 404, message: "no such attachment" },
  model_not_found: { status: 404, message: "no such model" },
  pairing_not_found: { status: 404, message: "no live pairing code or approved user of that name" },
  image_too_large: { status: 413, message: "an image is larger than allowed" },
  invalid_image: { status: 400, message: "not a PNG, JPEG, GIF or WebP image" },
  invalid_image_url: { status: 400, message: "this image URL is not fetched" },
  image_fetch_failed: { status: 400, message: "the image could not be fetched" },

  // A message's way through the gateway (the API and the webhooks)
  /** Input the gateway does not take (empty, too long). */
  message_rejected: { status: 400, message: "message rejected" },
  /** The API's wait for the turn ran out; the message is still processed. */
  turn_timeout: { status: 504, message: "no reply in time; the message is still being processed" },
  /** A sync webhook's wait for the turn ran out; the message is still processed. */
  reply_timeout: { status: 504, message: "no reply in time; the message is still being processed" },
  turn_failed: { status: 502, message: "the turn failed" },
  turn_rejected: { status: 409, message: "the turn was rejected" },
  /** The message could not be recorded (the database or Redis): the sender retries. */
  dependency_unavailable: { status: 503, message: "message could not be recorded; retry later" },

  // Platform routes
  invalid_signature: { status: 401, message: "missing or invalid signature" },
  invalid_secret_token: { status: 401, message: "missing or wrong X-Telegram-Bot-Api-Secret-Token" },
  /** Platform requests whose bodies are not verified yet hold the process's budget of bytes: retry shortly. */
  too_many_unverified_requests: { status: 503, message: "too many platform requests are being received at once; retry shortly" },
  too_many_failed_signatures: { status: 429, message: "too many requests with a wrong signature or secret from this address" },
  malformed_request: { status: 400, message: "malformed request" },
  unknown_route: { status: 404, message: "unknown webhook route" },
  verification_failed: { status: 403, message: "hub.mode must be subscribe and hub.verify_token must match WHATSAPP_VERIFY_TOKEN" },
  invalid_challenge: { status: 400, message: "hub.challenge is missing or too long" },
} as const satisfies Record<string, HttpErrorSpec>;

export type HttpErrorCode = keyof typeof HTTP_ERRORS;

/** The error frames of an open WebSocket (`{"type":"error","code","message"}`): code -> default message. */
export const FRAME_ERRORS = {
  bad_json: "frame is not valid JSON",
  bad_frame: "frame is not a valid client frame",
  unknown_type: "unknown frame type",
  frame_too_large: "frame is larger than the limit",
  too_many_subscriptions: "too many subscriptions on this connection",
  busy: "too many frames waiting; slow down",
  /** The event stream could not be read or subscribed to. */
  unavailable: "events are unavailable; retry",
  /** `since` is older than what the session's stream still stores: some events cannot be replayed. */
  events_trimmed: "some events are no longer stored",
  internal: "internal error",
  /** A `send` to a session a chat platform created: clients write only to their own sessions. */
  session_not_addressable: "this session belongs to a chat platform; send to API or WebSocket sessions only",
} as const satisfies Record<string, string>;

export type FrameErrorCode = keyof typeof FRAME_ERRORS;
