// The Switchboard console: a session list polled from /api/sessions, one session's transcript
// from /api/sessions/:id/messages, and its live events over /ws. Plain browser JavaScript, no
// build step. Everything user- or model-written is put in the page as text, never as HTML.
/* global location, history, crypto, Headers, Event, CSS */

const KEY_STORAGE = "switchboard.apiKey";
const POLL_MS = 2000;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 5000;
/** Cap on the live activity list, so a long-open tab stays fast. */
const MAX_ACTIVITY_ITEMS = 500;
/** Load the transcript anyway if a subscription is not confirmed by then. */
const SUBSCRIBE_FALLBACK_MS = 1500;

const $ = (id) => document.getElementById(id);
const el = {
  conn: $("connection-status"),
  forgetKey: $("forget-key-button"),
  keyPanel: $("key-panel"),
  keyForm: $("key-form"),
  keyInput: $("api-key-input"),
  keyError: $("key-error"),
  keySubmit: $("key-submit"),
  app: $("app"),
  newSession: $("new-session-button"),
  sessionList: $("session-list"),
  sessionsEmpty: $("sessions-empty"),
  sessionsError: $("sessions-error"),
  pairings: $("pairings"),
  pairingList: $("pairing-list"),
  noSession: $("no-session"),
  sessionView: $("session-view"),
  sessionTitle: $("session-title"),
  sessionSource: $("session-source"),
  sessionState: $("session-state"),
  interrupt: $("interrupt-button"),
  stop: $("stop-button"),
  transcript: $("transcript"),
  activity: $("activity"),
  sendForm: $("send-form"),
  messageInput: $("message-input"),
  sendStatus: $("send-status"),
};

const state = {
  keyRequired: document.body.dataset.apiKeyRequired === "true",
  key: null,
  running: false,
  /** Sessions as /api/sessions last listed them, by id. */
  sessions: new Map(),
  /** Sessions made with "New session" that the gateway does not list yet. */
  localSessions: new Map(),
  rowById: new Map(),
  selectedId: null,
  ws: null,
  wsOpen: false,
  reconnectDelay: RECONNECT_MIN_MS,
  reconnectTimer: null,
  pollTimer: null,
  pollSeq: 0,
  /** Newest event id seen per session: duplicates are dropped, a reconnect resumes after it. */
  lastEventId: new Map(),
  /** `send` frames not acknowledged yet, by client_message_id: resent after a reconnect. */
  unacked: new Map(),
  /** The live turn block of the selected session, while a turn streams. */
  turnBlock: null,
  transcriptLoad: 0,
  subscribeFallback: null,
};

// ---------------------------------------------------------------------------------------------
// Small helpers

function make(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined) continue;
    if (name === "className") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("data-") || name.startsWith("aria-") || name === "title" || name === "role") node.setAttribute(name, String(value));
    else node[name] = value;
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function randomHex(bytes) {
  const buf = new Uint8Array(bytes);
  crypto.getRandomValues(buf);
  return Array.from(buf, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A unique id; randomUUID needs a secure context, getRandomValues does not. */
function uniqueId() {
  return typeof crypto.randomUUID === "function" && window.isSecureContext ? crypto.randomUUID() : randomHex(16);
}

function capitalise(word) {
  return word ? word[0].toUpperCase() + word.slice(1) : "";
}

function clockTime(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function relativeTime(epochSeconds) {
  if (!epochSeconds) return "—";
  const seconds = Math.max(0, Math.round(Date.now() / 1000 - epochSeconds));
  if (seconds < 5) return "just now";
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(epochSeconds * 1000).toLocaleDateString();
}

/** Compare stream ids "ms-seq" numerically. */
function compareEventIds(a, b) {
  const [am, as = "0"] = a.split("-");
  const [bm, bs = "0"] = b.split("-");
  const byMs = BigInt(am) - BigInt(bm);
  if (byMs !== 0n) return byMs < 0n ? -1 : 1;
  const bySeq = BigInt(as) - BigInt(bs);
  return bySeq === 0n ? 0 : bySeq < 0n ? -1 : 1;
}

/** The four states a person cares about; the API says "running+queued" when both apply. */
function displayState(apiState) {
  if (typeof apiState !== "string") return "idle";
  if (apiState.startsWith("running")) return "running";
  return apiState;
}

/** Messages waiting for a turn (the API leaves out the one a running turn works on). */
function waitingCount(session) {
  return Math.max(0, Number(session.queued ?? 0));
}

class Unauthorized extends Error {}

// ---------------------------------------------------------------------------------------------
// HTTP

function authHeaders(extra) {
  const headers = new Headers(extra);
  if (state.key) headers.set("Authorization", `Bearer ${state.key}`);
  return headers;
}

async function errorMessage(res) {
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) return `${res.status}: ${body.error.message}`;
  } catch {
    // Not JSON: the status says enough.
  }
  return `HTTP ${res.status}`;
}

async function api(path, init = {}) {
  const res = await fetch(path, { ...init, headers: authHeaders(init.headers), cache: "no-store" });
  if (res.status === 401) {
    keyRejected("The gateway no longer accepts the saved key. Enter the key again.");
    throw new Unauthorized("unauthorized");
  }
  if (!res.ok) throw new Error(await errorMessage(res));
  return res.status === 204 ? null : res.json();
}

// ---------------------------------------------------------------------------------------------
// The API key

function showKeyPanel(message) {
  el.app.hidden = true;
  el.keyPanel.hidden = false;
  el.forgetKey.hidden = true;
  el.keyError.textContent = message || "";
  el.keyError.hidden = !message;
  el.keyInput.setAttribute("aria-invalid", message ? "true" : "false");
  el.keySubmit.disabled = false;
  el.keySubmit.textContent = "Unlock";
  el.keyInput.focus();
  el.keyInput.select();
}

/** The key stopped working (or never did): forget it, stop everything, ask again. */
function keyRejected(message) {
  if (!state.keyRequired) return;
  sessionStorage.removeItem(KEY_STORAGE);
  state.key = null;
  stopLive();
  showKeyPanel(message);
}

async function checkKey(key) {
  const res = await fetch("/api/sessions?limit=1", { headers: { Authorization: `Bearer ${key}` }, cache: "no-store" });
  if (res.status === 401) return false;
  if (!res.ok) throw new Error(await errorMessage(res));
  return true;
}

/** Let the browser open /admin/queues: the gateway sets its cookie (HttpOnly, path /admin). */
async function openAdminSession() {
  try {
    await fetch("/admin/session", { method: "POST", headers: authHeaders(), cache: "no-store" });
  } catch {
    // The dashboard link then asks for the key itself; the console works regardless.
  }
}

el.keyForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = el.keyInput.value.trim();
  if (!key) return showKeyPanel("Enter the API key.");
  el.keySubmit.disabled = true;
  el.keySubmit.textContent = "Checking…";
  let accepted;
  try {
    accepted = await checkKey(key);
  } catch (err) {
    return showKeyPanel(`Could not reach the gateway (${err.message}). Try again.`);
  }
  if (!accepted) return showKeyPanel("That key was not accepted. Check it and try again.");
  sessionStorage.setItem(KEY_STORAGE, key);
  state.key = key;
  el.keyInput.value = "";
  void startLive();
});

el.forgetKey.addEventListener("click", async () => {
  try {
    await fetch("/admin/session", { method: "DELETE", headers: authHeaders(), cache: "no-store" });
  } catch {
    // Best effort: the cookie ends with the browser session anyway.
  }
  keyRejected("Key forgotten. Enter it again to continue.");
});

// ---------------------------------------------------------------------------------------------
// Running: poll the list, keep the WebSocket open

async function startLive() {
  el.keyPanel.hidden = true;
  el.app.hidden = false;
  el.forgetKey.hidden = !state.keyRequired;
  state.running = true;
  if (state.keyRequired) void openAdminSession();
  connectWebSocket();
  await pollSessions();
  const fromHash = sessionFromHash();
  if (fromHash && fromHash !== state.selectedId) selectSession(fromHash);
}

function stopLive() {
  state.running = false;
  clearTimeout(state.pollTimer);
  clearTimeout(state.reconnectTimer);
  state.pollTimer = null;
  state.reconnectTimer = null;
  if (state.ws) {
    const ws = state.ws;
    state.ws = null;
    ws.close();
  }
  state.wsOpen = false;
  setConnection("idle", "not connected");
}

function schedulePoll(delay = POLL_MS) {
  clearTimeout(state.pollTimer);
  if (state.running) state.pollTimer = setTimeout(pollSessions, delay);
}

async function pollSessions() {
  if (!state.running) return;
  // An event can start a poll while another is in flight: only the newest one renders.
  const poll = ++state.pollSeq;
  try {
    const body = await api("/api/sessions");
    if (poll !== state.pollSeq) return;
    state.sessions = new Map(body.sessions.map((s) => [s.id, s]));
    for (const id of state.sessions.keys()) state.localSessions.delete(id);
    el.sessionsError.hidden = true;
    renderSessionList();
    // A failure here leaves the list as it was: the sessions matter more.
    await refreshPairings().catch(() => undefined);
  } catch (err) {
    if (err instanceof Unauthorized || poll !== state.pollSeq) return;
    el.sessionsError.textContent = `Could not load sessions: ${err.message}`;
    el.sessionsError.hidden = false;
  }
  // A hidden tab polls less often.
  schedulePoll(document.hidden ? POLL_MS * 5 : POLL_MS);
}

// Strangers waiting for approval (ACCESS_MODE=pairing): their live codes, each with Approve.
async function refreshPairings() {
  const body = await api("/api/pairing");
  const waiting = body.pairings.filter((p) => p.approved_at === null);
  el.pairings.hidden = waiting.length === 0;
  el.pairingList.replaceChildren(
    ...waiting.map((p) => {
      const approve = make("button", { type: "button", "data-testid": "approve-pairing", text: "Approve" });
      approve.addEventListener("click", async () => {
        approve.disabled = true;
        try {
          await api(`/api/pairing/${encodeURIComponent(p.code)}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
        } finally {
          await refreshPairings().catch(() => undefined);
        }
      });
      return make("tr", { "data-testid": "pairing-row", "data-code": p.code }, make("td", { className: "mono", text: `${p.platform}:${p.user_id}` }), make("td", { className: "mono", text: p.code }), make("td", {}, approve));
    }),
  );
}

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && state.running) schedulePoll(0);
});

// ---------------------------------------------------------------------------------------------
// Session list

function allSessions() {
  const list = [...state.sessions.values()];
  for (const local of state.localSessions.values()) list.push(local);
  return list.sort((a, b) => (b.last_activity ?? b.started_at ?? 0) - (a.last_activity ?? a.started_at ?? 0));
}

function sessionRow(id) {
  let row = state.rowById.get(id);
  if (row) return row;
  const open = make("button", { type: "button", className: "open", text: id, title: id, "data-testid": "session-open" });
  open.addEventListener("click", () => selectSession(id));
  row = make(
    "tr",
    { className: "session-row", "data-testid": "session-row", "data-session-id": id, "data-selected": "false" },
    make("td", {}, open),
    make("td", { "data-testid": "session-source" }),
    make("td", { className: "nowrap", "data-testid": "session-last-activity" }),
    make("td", {}, make("span", { className: "badge", "data-testid": "session-state" })),
    make("td", { "data-testid": "session-queued" }),
  );
  state.rowById.set(id, row);
  return row;
}

function markSelected(row, selected) {
  row.dataset.selected = String(selected);
  const open = row.querySelector("button.open");
  if (selected) open.setAttribute("aria-current", "true");
  else open.removeAttribute("aria-current");
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function renderSessionList() {
  const sessions = allSessions();
  const seen = new Set();
  sessions.forEach((s, index) => {
    seen.add(s.id);
    const row = sessionRow(s.id);
    const [, source, last, stateCell, queued] = row.children;
    const shown = s.local ? "new" : displayState(s.state);
    setText(source, s.source ?? "");
    setText(last, relativeTime(s.last_activity ?? s.started_at));
    last.title = s.last_activity ? new Date(s.last_activity * 1000).toLocaleString() : "";
    const badge = stateCell.firstChild;
    setText(badge, shown);
    badge.dataset.state = shown;
    row.dataset.state = shown;
    setText(queued, String(waitingCount(s)));
    markSelected(row, s.id === state.selectedId);
    // Move only rows that are out of place, so focus and scroll survive a refresh.
    if (el.sessionList.children[index] !== row) el.sessionList.insertBefore(row, el.sessionList.children[index] ?? null);
  });
  for (const [id, row] of state.rowById) {
    if (!seen.has(id)) {
      row.remove();
      state.rowById.delete(id);
    }
  }
  el.sessionsEmpty.hidden = sessions.length > 0;
  renderSessionHeader();
}

function renderSessionHeader() {
  const id = state.selectedId;
  if (!id) return;
  const s = state.sessions.get(id) ?? state.localSessions.get(id);
  const shown = !s ? "unknown" : s.local ? "new" : displayState(s.state);
  setText(el.sessionTitle, id);
  setText(el.sessionSource, s?.source ?? "websocket");
  const waiting = s && !s.local ? waitingCount(s) : 0;
  setText(el.sessionState, waiting ? `${shown} · ${waiting} queued` : shown);
  el.sessionState.dataset.state = shown;
}

el.newSession.addEventListener("click", () => {
  const id = `console-${randomHex(8)}`;
  state.localSessions.set(id, { id, source: "websocket", started_at: Date.now() / 1000, last_activity: null, state: "new", queued: 0, local: true });
  renderSessionList();
  selectSession(id);
  el.messageInput.focus();
});

// ---------------------------------------------------------------------------------------------
// One session

function sessionFromHash() {
  const match = /^#session=(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

window.addEventListener("hashchange", () => {
  const id = sessionFromHash();
  if (state.running && id && id !== state.selectedId) selectSession(id);
});

function selectSession(id) {
  const previous = state.selectedId;
  if (previous && previous !== id) sendFrame({ type: "unsubscribe", session_id: previous });
  state.selectedId = id;
  state.turnBlock = null;
  state.lastEventId.delete(id);
  const hash = `#session=${encodeURIComponent(id)}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
  el.noSession.hidden = true;
  el.sessionView.hidden = false;
  el.transcript.replaceChildren();
  el.activity.replaceChildren();
  setText(el.sendStatus, "");
  for (const [rowId, row] of state.rowById) markSelected(row, rowId === id);
  renderSessionHeader();
  // The transcript is read once the subscription is live, so no event falls between the two.
  if (!subscribe(id)) void loadTranscript(id);
}

/** Subscribe the selected session; its transcript loads when the server confirms (or soon anyway). */
function subscribe(id) {
  const since = state.lastEventId.get(id);
  if (!sendFrame(since ? { type: "subscribe", session_id: id, since } : { type: "subscribe", session_id: id })) return false;
  clearTimeout(state.subscribeFallback);
  state.subscribeFallback = setTimeout(() => id === state.selectedId && loadTranscript(id), SUBSCRIBE_FALLBACK_MS);
  return true;
}

function onSubscribed(id) {
  if (id !== state.selectedId) return;
  clearTimeout(state.subscribeFallback);
  void loadTranscript(id);
}

async function loadTranscript(id) {
  if (state.localSessions.has(id)) return;
  const load = ++state.transcriptLoad;
  let body;
  try {
    body = await api(`/api/sessions/${encodeURIComponent(id)}/messages`);
  } catch (err) {
    if (err instanceof Unauthorized || load !== state.transcriptLoad || id !== state.selectedId) return;
    // A session that does not exist yet (addressed but never written to) has no transcript.
    if (!/^404/.test(err.message)) addActivity(make("li", { className: "ev error", text: `Could not load the transcript: ${err.message}` }));
    return;
  }
  if (load !== state.transcriptLoad || id !== state.selectedId) return;
  const atBottom = isScrolledToBottom(el.transcript);
  el.transcript.replaceChildren(...body.messages.map(renderMessage));
  if (atBottom) el.transcript.scrollTop = el.transcript.scrollHeight;
}

let transcriptTimer = null;
function reloadTranscriptSoon() {
  clearTimeout(transcriptTimer);
  transcriptTimer = setTimeout(() => state.selectedId && loadTranscript(state.selectedId), 150);
}

function renderMessage(m) {
  const meta = make(
    "div",
    { className: "meta" },
    make("span", { className: "role", "data-testid": "message-role", text: capitalise(m.role) }),
    m.display_kind ? make("span", { className: "badge", "data-testid": "display-kind", title: "display kind", text: m.display_kind }) : null,
    m.platform_message_id
      ? make("span", { className: "mono", "data-testid": "platform-message-id", title: "platform message id", text: `id ${m.platform_message_id}` })
      : null,
    m.tool_name ? make("span", { className: "mono", text: `tool ${m.tool_name}` }) : null,
    m.timestamp ? make("span", { text: new Date(m.timestamp * 1000).toLocaleString() }) : null,
  );
  const calls = (m.tool_calls ?? []).map((call) =>
    make("div", { className: "tool", text: `→ ${call.function?.name ?? "tool"}(${call.function?.arguments ?? ""})` }),
  );
  return make(
    "li",
    { className: "msg", "data-testid": "message", "data-role": m.role, "data-message-id": m.id },
    meta,
    m.content ? make("div", { className: "content", "data-testid": "message-content", text: m.content }) : null,
    ...calls,
  );
}

function isScrolledToBottom(node) {
  return node.scrollHeight - node.scrollTop - node.clientHeight < 40;
}

// ---------------------------------------------------------------------------------------------
// Live activity

function addActivity(item) {
  const atBottom = isScrolledToBottom(el.activity);
  el.activity.append(item);
  while (el.activity.children.length > MAX_ACTIVITY_ITEMS) el.activity.firstElementChild.remove();
  if (atBottom) el.activity.scrollTop = el.activity.scrollHeight;
}

function line(className, text, ts, extra = {}) {
  return make("li", { className: `ev ${className}`, ...extra }, make("span", { className: "ts", text: clockTime(ts ?? Date.now()) }), text);
}

function currentTurn(ts) {
  if (state.turnBlock && state.turnBlock.isConnected) return state.turnBlock;
  const block = make(
    "li",
    { className: "turn", "data-testid": "turn", "data-outcome": "running" },
    make("div", { className: "meta" }, make("span", { className: "ts", text: clockTime(ts) }), make("span", { className: "role", text: "Assistant" })),
    make("div", { className: "stream", "data-testid": "stream-text" }),
  );
  state.turnBlock = block;
  addActivity(block);
  return block;
}

/**
 * Streamed text goes into the block's last text segment; a tool call in between starts a new one.
 * `offset` (a delta's) is where the text starts in the segment: text already shown is skipped, and
 * after a gap (frames missed while reconnecting) nothing more is shown until the turn's end event
 * brings the final text.
 */
function appendText(block, text, offset) {
  let segment = block.lastElementChild;
  if (!segment || !segment.classList.contains("stream")) {
    segment = make("div", { className: "stream", "data-testid": "stream-text" });
    block.append(segment);
  }
  if (segment.dataset.gap) return;
  const shown = segment.textContent.length;
  const at = typeof offset === "number" ? offset : shown;
  if (at > shown) {
    segment.dataset.gap = "true";
    return;
  }
  const fresh = text.slice(shown - at);
  if (fresh) segment.append(fresh);
}

function dropEmptyText(block) {
  const last = block.lastElementChild;
  if (last && last.classList.contains("stream") && !last.textContent) last.remove();
}

/** The final text is the last model call's: fill in what the streamed frames did not show. */
function completeText(block, final) {
  const last = block.lastElementChild;
  if (!last || !last.classList.contains("stream")) return appendText(block, final);
  delete last.dataset.gap;
  if (final.startsWith(last.textContent)) last.append(final.slice(last.textContent.length));
}

function streamedText(block) {
  return [...block.querySelectorAll(".stream")].map((s) => s.textContent).join("");
}

function endTurn(event, outcome, label) {
  const block = currentTurn(event.ts);
  const final = typeof event.data.final_response === "string" ? event.data.final_response : "";
  // Joined after its deltas (or replayed without them): show the final text instead.
  if (!streamedText(block) && final) appendText(block, final);
  else if (final && outcome !== "failed") completeText(block, final);
  block.dataset.outcome = outcome;
  block.append(make("div", { className: "marker", "data-testid": "turn-marker", "data-outcome": outcome, text: label }));
  state.turnBlock = null;
  reloadTranscriptSoon();
  schedulePoll(100);
}

function renderEvent(event) {
  const data = event.data ?? {};
  switch (event.kind) {
    case "message.queued": {
      schedulePoll(100);
      // This tab's own message is already shown: mark it queued instead of repeating it.
      const own = data.platform_message_id ? ownSentItem(String(data.platform_message_id)) : null;
      if (own) {
        own.dataset.queued = "true";
        return;
      }
      addActivity(
        make(
          "li",
          { className: "msg", "data-role": "user", "data-testid": "queued-message" },
          make("div", { className: "meta" }, make("span", { className: "ts", text: clockTime(event.ts) }), make("span", { className: "role", text: `User${data.platform ? ` (${data.platform})` : ""}` }), make("span", { text: "queued" })),
          make("div", { className: "content", text: data.text ?? "" }),
        ),
      );
      return;
    }
    case "turn.waiting":
      addActivity(line("status", `Waiting for the previous turn to finish (${Math.round(Number(data.elapsed_seconds ?? 0))} s)…`, event.ts, { "data-testid": "status-line" }));
      return;
    case "turn.started":
      state.turnBlock = null;
      // Which per-channel settings (YAML channels:) the turn runs with, when any.
      if (data.settings) addActivity(line("status", `Channel settings: ${data.settings}`, event.ts, { "data-testid": "channel-settings" }));
      currentTurn(event.ts);
      schedulePoll(100);
      return;
    case "status":
      addActivity(line("status", data.text ?? "", event.ts, { "data-testid": "status-line", "data-level": data.level ?? "lifecycle" }));
      return;
    case "delta":
      if (typeof data.text === "string") appendText(currentTurn(event.ts), data.text, data.offset);
      if (isScrolledToBottom(el.activity)) el.activity.scrollTop = el.activity.scrollHeight;
      return;
    case "tool.started":
      dropEmptyText(currentTurn(event.ts));
      currentTurn(event.ts).append(make("div", { className: "tool", "data-testid": "tool-call", text: `⚙ ${data.name}(${data.arguments ?? ""})` }));
      return;
    case "tool.finished":
      currentTurn(event.ts).append(
        make("div", { className: "tool", "data-testid": "tool-result", text: `${data.ok === false ? "✗" : "✓"} ${data.name} → ${data.result ?? ""}` }),
      );
      return;
    case "turn.completed":
      return endTurn(event, "completed", "Turn completed");
    case "turn.interrupted":
      return endTurn(event, "interrupted", data.message ? `Turn interrupted: ${data.message}` : "Turn interrupted");
    case "turn.failed":
      return endTurn(event, "failed", `Turn failed${data.error ? `: ${data.error}` : ""}`);
    case "reply.delivered":
      addActivity(
        line("status", `Reply delivered${data.platform ? ` to ${data.platform}` : ""}${data.platform_message_id ? ` as ${data.platform_message_id}` : ""}`, event.ts, {
          "data-testid": "status-line",
        }),
      );
      return;
    default:
      addActivity(line("status", `${event.kind} ${JSON.stringify(data)}`, event.ts, { "data-testid": "status-line" }));
  }
}

// ---------------------------------------------------------------------------------------------
// WebSocket

function setConnection(kind, text) {
  el.conn.dataset.state = kind;
  setText(el.conn, text);
}

function connectWebSocket() {
  if (!state.running || state.ws) return;
  const url = new URL("/ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  if (state.key) url.searchParams.set("token", state.key);
  const ws = new WebSocket(url);
  state.ws = ws;
  let opened = false;
  setConnection("connecting", "connecting…");
  ws.addEventListener("open", () => {
    if (state.ws !== ws) return;
    opened = true;
    state.wsOpen = true;
    state.reconnectDelay = RECONNECT_MIN_MS;
    setConnection("connected", "live");
    // Whatever was missed while disconnected is replayed after `since`, or is in the transcript,
    // which reloads once the subscription is confirmed.
    if (state.selectedId) subscribe(state.selectedId);
    for (const frame of state.unacked.values()) ws.send(JSON.stringify(frame));
  });
  ws.addEventListener("message", (message) => {
    if (state.ws !== ws) return;
    let frame;
    try {
      frame = JSON.parse(message.data);
    } catch {
      return;
    }
    handleFrame(frame);
  });
  ws.addEventListener("close", () => {
    if (state.ws !== ws) return;
    state.ws = null;
    state.wsOpen = false;
    if (!state.running) return;
    setConnection("disconnected", "reconnecting…");
    // A refused upgrade looks like any failed connection; ask the API whether the key is the cause.
    if (!opened && state.keyRequired) {
      api("/api/sessions?limit=1").catch(() => undefined);
    }
    state.reconnectTimer = setTimeout(connectWebSocket, state.reconnectDelay);
    state.reconnectDelay = Math.min(state.reconnectDelay * 2, RECONNECT_MAX_MS);
  });
}

/** This tab's line for a message it sent, by client_message_id. */
function sentItem(clientMessageId) {
  return el.activity.querySelector(`[data-client-message-id="${CSS.escape(clientMessageId)}"]`);
}

/** The platform message id of a WebSocket message is its client_message_id, maybe scoped as `<session>:<id>`. */
function ownSentItem(platformMessageId) {
  return sentItem(platformMessageId) ?? sentItem(platformMessageId.slice(platformMessageId.lastIndexOf(":") + 1));
}

function sendFrame(frame) {
  if (!state.wsOpen || !state.ws) return false;
  state.ws.send(JSON.stringify(frame));
  return true;
}

function handleFrame(frame) {
  switch (frame.type) {
    case "event": {
      if (frame.session_id !== state.selectedId) return;
      // Streamed text is live only and carries the id of the last stored event before it: it is
      // never a repeat of that event, and resuming from its id stays exact.
      if (frame.kind !== "delta") {
        const last = state.lastEventId.get(frame.session_id);
        if (last && compareEventIds(frame.id, last) <= 0) return;
        state.lastEventId.set(frame.session_id, frame.id);
      }
      renderEvent(frame);
      return;
    }
    case "ack": {
      const pending = state.unacked.get(frame.client_message_id);
      state.unacked.delete(frame.client_message_id);
      const item = sentItem(frame.client_message_id);
      const text =
        frame.status === "accepted" ? "accepted" : frame.status === "duplicate" ? "already received" : `rejected: ${frame.reason ?? "no reason given"}`;
      if (item) {
        item.dataset.status = frame.status;
        setText(item.querySelector(".ack"), ` (${text})`);
      }
      if (pending && pending.session_id === state.selectedId) setText(el.sendStatus, `Message ${text}.`);
      schedulePoll(100);
      return;
    }
    case "error": {
      if (frame.client_message_id) state.unacked.delete(frame.client_message_id);
      if (frame.session_id && frame.session_id !== state.selectedId) return;
      addActivity(line("error", `Error (${frame.code}): ${frame.message}`, Date.now(), { "data-testid": "error-line" }));
      return;
    }
    case "subscribed":
      onSubscribed(frame.session_id);
      return;
    default:
      // `unsubscribed` needs no action.
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// Sending and interrupting

function submitMessage() {
  const id = state.selectedId;
  const text = el.messageInput.value;
  if (!id || !text.trim()) return;
  const clientMessageId = uniqueId();
  const frame = { type: "send", session_id: id, text, client_message_id: clientMessageId };
  state.unacked.set(clientMessageId, frame);
  const sent = sendFrame(frame);
  addActivity(
    make(
      "li",
      { className: "msg", "data-role": "user", "data-testid": "sent-message", "data-client-message-id": clientMessageId, "data-status": "sending" },
      make("div", { className: "meta" }, make("span", { className: "role", text: "You" }), make("span", { className: "ack", text: sent ? " (sending…)" : " (waiting for the connection…)" })),
      make("div", { className: "content", text }),
    ),
  );
  el.activity.scrollTop = el.activity.scrollHeight;
  el.messageInput.value = "";
  setText(el.sendStatus, sent ? "Sending…" : "Not connected: the message goes out when the connection is back.");
}

el.sendForm.addEventListener("submit", (event) => {
  event.preventDefault();
  submitMessage();
});

el.messageInput.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    el.sendForm.dispatchEvent(new Event("submit", { cancelable: true }));
  }
});

async function interrupt(hard) {
  const id = state.selectedId;
  if (!id) return;
  const label = hard ? "Stop" : "Interrupt";
  if (!sendFrame({ type: "interrupt", session_id: id, hard })) {
    // No live connection: the HTTP API does the same.
    try {
      await api(`/api/sessions/${encodeURIComponent(id)}/interrupt`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ hard }),
      });
    } catch (err) {
      if (!(err instanceof Unauthorized)) addActivity(line("error", `${label} failed: ${err.message}`, Date.now(), { "data-testid": "error-line" }));
      return;
    }
  }
  const text = `${label} requested`;
  // Shown inside the running turn, right above the marker it leads to.
  if (state.turnBlock && state.turnBlock.isConnected) state.turnBlock.append(make("div", { className: "ev status", "data-testid": "status-line", text }));
  else addActivity(line("status", text, Date.now(), { "data-testid": "status-line" }));
}

el.interrupt.addEventListener("click", () => void interrupt(false));
el.stop.addEventListener("click", () => void interrupt(true));

// ---------------------------------------------------------------------------------------------
// Start

if (state.keyRequired) {
  state.key = sessionStorage.getItem(KEY_STORAGE);
  if (state.key) void startLive();
  else showKeyPanel("");
} else {
  void startLive();
}
