// Signed webhooks through a real gateway, routes from a YAML config file: a GitHub-style sync
// route answers with the reply; a Standard-Webhooks callback route answers 202 and POSTs the
// signed reply to a local receiver, which checks it with the exported verify function.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { stringify as toYaml } from "yaml";
import { githubSignature, signWebhook, verifyWebhook } from "../../src/adapters/webhook/index.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from "./support/callback-receiver.js";
import { uniqueToken } from "./support/fixtures.js";
import { deliveriesOf, inboxRowOf, inboxTotal, settle, transcript } from "./support/probes.js";

const LOG_LEVEL = process.env.PLATFORMS_LOG ?? "silent";
const GITHUB_SECRET = "It's a Secret to Everybody";
const STANDARD_SECRET = `whsec_${randomBytes(24).toString("base64")}`;

let receiver: CallbackReceiver;
let gw: TestGateway;
let configDir: ReturnType<typeof makeTempDir>;

beforeAll(async () => {
  receiver = await startCallbackReceiver();
  configDir = makeTempDir("sb-platform-webhooks");
  const configFile = join(configDir.dir, "switchboard.yaml");
  writeFileSync(
    configFile,
    toYaml({
      webhooks: {
        ci: { secret: GITHUB_SECRET, style: "github", reply: "sync" },
        alerts: { secret: STANDARD_SECRET, style: "standard", reply: "callback", callback_url: receiver.url },
      },
    }),
  );
  gw = await startTestGateway({ http: true, workers: true, env: { SWITCHBOARD_CONFIG: configFile, LOG_LEVEL } });
});

afterAll(async () => {
  await gw?.stop();
  await receiver?.close();
  configDir?.cleanup();
});

function messageBody(text: string, chat = `room-${uniqueToken()}`, id?: string): string {
  return JSON.stringify({ ...(id ? { id } : {}), chat_id: chat, user_id: "u-7", text });
}

function postGithub(body: string, delivery: string, options: { sendBody?: string } = {}): Promise<Response> {
  return fetch(`${gw.gateway.url}/webhooks/ci`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": githubSignature(GITHUB_SECRET, body), "x-github-delivery": delivery },
    body: options.sendBody ?? body,
    signal: AbortSignal.timeout(15_000),
  });
}

function postStandard(body: string, id: string, options: { sendBody?: string } = {}): Promise<Response> {
  return fetch(`${gw.gateway.url}/webhooks/alerts`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signWebhook("standard", STANDARD_SECRET, body, { id }) },
    body: options.sendBody ?? body,
    signal: AbortSignal.timeout(5_000),
  });
}

function callbacksFor(id: string): ReceivedCallback[] {
  return receiver.received.filter((r) => (JSON.parse(r.body.toString("utf8")) as { in_reply_to?: string }).in_reply_to === id);
}

async function assistantLines(sessionId: string): Promise<string[]> {
  return (await transcript(gw.gateway, sessionId)).filter((line) => line.startsWith("assistant: "));
}

describe("webhooks through the gateway", () => {
  it("answers a GitHub-signed delivery on a sync route with {reply, session_id}", async () => {
    const text = `build ${uniqueToken()} finished`;
    const id = `gh-${uniqueToken()}`;
    const res = await postGithub(messageBody(text, undefined, id), `delivery-${uniqueToken()}`);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { reply: string; session_id: string };
    expect(answer.reply).toContain(`Echo: ${text}`);
    const row = await inboxRowOf(gw.gateway, "webhook", `ci:${id}`);
    expect(answer.session_id).toBe(row.session_id);
    expect(await transcript(gw.gateway, answer.session_id)).toEqual([`user: ${text}`, `assistant: ${answer.reply}`]);
  });

  it("answers a Standard-Webhooks delivery on a callback route with 202, then POSTs the signed reply", async () => {
    const text = `disk ${uniqueToken()} almost full`;
    const id = `msg_${uniqueToken()}`;
    const claims = vi.spyOn(gw.gateway.store, "claimDelivery");
    onTestFinished(() => claims.mockRestore());
    const res = await postStandard(messageBody(text), id);
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { accepted: boolean; session_id: string };
    expect(accepted.accepted).toBe(true);

    const [callback] = await waitFor(() => (callbacksFor(id).length > 0 ? callbacksFor(id) : null), 10_000, "callback");
    const header = (name: string): string | undefined => callback.headers[name] as string | undefined;
    expect(verifyWebhook("standard", STANDARD_SECRET, header, callback.body)).toEqual({ ok: true });
    const tampered = Buffer.from(callback.body.toString("utf8").replace("Echo", "Ecco"));
    expect(verifyWebhook("standard", STANDARD_SECRET, header, tampered).ok).toBe(false);
    const payload = JSON.parse(callback.body.toString("utf8")) as Record<string, unknown>;
    expect(payload).toMatchObject({ session_id: accepted.session_id, user_id: "u-7", in_reply_to: id, possible_duplicate: false });
    expect(String(payload.reply)).toContain(`Echo: ${text}`);
    expect(header("webhook-id")).toBe(`dlv_${String(payload.delivery_id)}`);

    // The ledger row is 'sent' with the callback's message id.
    const delivery = await waitFor(
      async () => (await deliveriesOf(gw.gateway, accepted.session_id)).find((d) => d.id === payload.delivery_id && d.status === "sent"),
      5_000,
      "sent callback delivery",
    );
    expect(delivery.platform_message_id).toBe(header("webhook-id"));
    // Sent under the claim its row was inserted with, in the turn's flush: no claim of its own.
    expect(delivery).toMatchObject({ attempts: 1, possible_duplicate: false });
    expect(claims).not.toHaveBeenCalled();
  });

  it("answers a repeated delivery id with 200 {duplicate: true} and still runs one turn", async () => {
    const before = await inboxTotal(gw.gateway);
    // Sync route: the second delivery comes after the first was answered.
    const syncText = `deploy ${uniqueToken()} started`;
    const syncDelivery = `gh-${uniqueToken()}`;
    const syncBody = messageBody(syncText);
    const first = await postGithub(syncBody, syncDelivery);
    expect(first.status).toBe(200);
    const { session_id: syncSession } = (await first.json()) as { session_id: string };
    const again = await postGithub(syncBody, syncDelivery);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ duplicate: true });

    // Callback route: the sender retries while the first is still being answered.
    const cbText = `cpu ${uniqueToken()} hot`;
    const cbId = `msg_${uniqueToken()}`;
    const cbBody = messageBody(cbText);
    expect((await postStandard(cbBody, cbId)).status).toBe(202);
    const retry = await postStandard(cbBody, cbId);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toEqual({ duplicate: true });

    expect(await inboxTotal(gw.gateway)).toBe(before + 2);
    await waitFor(() => callbacksFor(cbId).length > 0, 10_000, "callback");
    await settle(500);
    expect(callbacksFor(cbId)).toHaveLength(1);
    const cbRow = await inboxRowOf(gw.gateway, "webhook", `alerts:${cbId}`);
    expect(await assistantLines(syncSession)).toEqual([`assistant: Echo: ${syncText}`]);
    expect(await assistantLines(cbRow.session_id)).toEqual([`assistant: Echo: ${cbText}`]);
  });

  it("answers a captured github-style delivery replayed under new X-GitHub-Delivery ids as a duplicate, without a turn", async () => {
    const before = await inboxTotal(gw.gateway);
    // One body with a signed id, one without (identified by its bytes).
    const withId = messageBody(`release ${uniqueToken()} tagged`, undefined, `rel-${uniqueToken()}`);
    const withoutId = messageBody(`alert ${uniqueToken()} fired`);
    const sessions: string[] = [];
    for (const body of [withId, withoutId]) {
      const first = await postGithub(body, `delivery-${uniqueToken()}`);
      expect(first.status).toBe(200);
      sessions.push(((await first.json()) as { session_id: string }).session_id);
      // An attacker who captured the request sends it again under fresh (unsigned) delivery ids.
      for (let replay = 0; replay < 3; replay++) {
        const again = await postGithub(body, `delivery-${uniqueToken()}`);
        expect(again.status).toBe(200);
        expect(await again.json()).toEqual({ duplicate: true });
      }
    }
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before + 2);
    for (const session of sessions) expect(await assistantLines(session)).toHaveLength(1);
  });

  it("refuses a body changed after signing with 401 in both styles and runs no turn", async () => {
    const before = await inboxTotal(gw.gateway);
    const body = messageBody("rotate the keys");
    const changed = body.replace("rotate", "delete");
    const github = await postGithub(body, `gh-${uniqueToken()}`, { sendBody: changed });
    expect(github.status).toBe(401);
    const standard = await postStandard(body, `msg_${uniqueToken()}`, { sendBody: changed });
    expect(standard.status).toBe(401);
    expect(((await standard.json()) as { error: { code: string } }).error.code).toBe("invalid_signature");
    await settle(300);
    expect(await inboxTotal(gw.gateway)).toBe(before);
  });
});
