// The console in a real browser (headless Chromium) against a real gateway: the key prompt, a
// streamed reply, Interrupt and Stop on slow turns, the session list updating without a reload,
// and the queue dashboard opening with the cookie the console obtained.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startTestGateway, type TestGateway } from "../support/gateway.js";
import { makeTempDir } from "../support/tmp.js";

const CHROMIUM = "/usr/bin/chromium";
const KEY = "browser-test-key";
/** The echo model pauses this long before each word: a long message makes a slow turn. */
const WORD_DELAY_MS = 60;
const SCREENSHOT_DIR = join(import.meta.dirname, "..", "..", "test-output");
const UI_TIMEOUT_MS = 8_000;

const onCI = !!process.env.CI && process.env.CI !== "false" && process.env.CI !== "0";
const chromiumMissing = !existsSync(CHROMIUM);
if (chromiumMissing && !onCI) {
  console.warn(`console browser test skipped: ${CHROMIUM} is missing (install it with: apt-get install -y chromium)`);
}

let gw: TestGateway;
let base: string;
let context: BrowserContext;
let page: Page;
let profile: { dir: string; cleanup: () => void };
let configDir: { dir: string; cleanup: () => void };

/** Run a step; on failure save a screenshot of the page under test-output/ and rethrow. */
async function step(name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    try {
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const file = join(SCREENSHOT_DIR, `console-${name.replace(/[^a-z0-9]+/gi, "-")}-${Date.now()}.png`);
      await page.screenshot({ path: file, fullPage: true, timeout: 3_000 });
      console.error(`screenshot saved: ${file}`);
    } catch {
      // The original failure matters more than a missing screenshot.
    }
    throw err;
  }
}

/** A long message: the echo model streams it back one word per WORD_DELAY_MS. */
function slowMessage(label: string, words: number): string {
  return [label, ...Array.from({ length: words }, (_, i) => `w${i + 1}`)].join(" ");
}

const turns = (): Locator => page.locator("#activity [data-testid=turn]");

describe.skipIf(chromiumMissing && !onCI)("the console in a browser", () => {
  beforeAll(async () => {
    if (chromiumMissing) throw new Error(`${CHROMIUM} is missing: install it with 'apt-get install -y chromium'`);
    // Per-channel settings for the console's own platform: its turns name them.
    profile = makeTempDir("sb-chromium");
    configDir = makeTempDir("sb-console-config");
    const config = join(configDir.dir, "channels.yaml");
    writeFileSync(config, "channels:\n  console-desk: { match: websocket, system_prompt: You answer in the console. }\n");
    gw = await startTestGateway({ env: { SWITCHBOARD_API_KEY: KEY, ECHO_CHUNK_DELAY_MS: String(WORD_DELAY_MS), SWITCHBOARD_CONFIG: config } });
    base = gw.gateway.url as string;
    context = await chromium.launchPersistentContext(profile.dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
      viewport: { width: 1400, height: 900 },
      timeout: 20_000,
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(UI_TIMEOUT_MS);
  });

  afterAll(async () => {
    await context?.close();
    profile?.cleanup();
    await gw?.stop();
    configDir?.cleanup();
  });

  it("asks for the key, says so clearly when it is wrong, and keeps a right one for the tab", async () => {
    await step("key", async () => {
      await page.goto(base);
      await expect.poll(() => page.getByTestId("key-panel").isVisible()).toBe(true);
      expect(await page.getByTestId("app").isVisible()).toBe(false);

      await page.getByLabel("API key", { exact: true }).fill("not-the-key");
      await page.getByRole("button", { name: "Unlock", exact: true }).click();
      await page.getByTestId("key-error").getByText("not accepted").waitFor();
      expect(await page.getByTestId("app").isVisible()).toBe(false);

      await page.getByLabel("API key", { exact: true }).fill(KEY);
      await page.getByRole("button", { name: "Unlock", exact: true }).click();
      await page.getByTestId("app").waitFor();
      await page.locator('[data-testid=connection-status][data-state="connected"]').waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem("switchboard.apiKey"))).toBe(KEY);

      // The dashboard cookie: only for /admin, out of the page script's reach, never cross-site.
      await expect
        .poll(async () => (await context.cookies(`${base}/admin/queues`)).find((c) => c.name === "switchboard_token"))
        .toMatchObject({ value: KEY, path: "/admin", httpOnly: true, sameSite: "Strict" });
    });
  });

  it("sends a message to a new session and shows the streamed reply, then the stored transcript", async () => {
    await step("send", async () => {
      await page.getByRole("button", { name: "New session", exact: true }).click();
      const sessionId = (await page.getByTestId("session-title").textContent()) ?? "";
      expect(sessionId).toMatch(/^console-[0-9a-f]{16}$/);
      await page.locator(`[data-testid=session-row][data-session-id="${sessionId}"]`).waitFor();

      // Record every text the reply shows on its way, to see it grow piece by piece.
      await page.evaluate(() => {
        const seen: string[] = [];
        Object.assign(window, { streamSnapshots: seen });
        new MutationObserver(() => {
          const turnsNow = document.querySelectorAll("#activity [data-testid=turn]");
          const text = turnsNow[turnsNow.length - 1]?.querySelector("[data-testid=stream-text]")?.textContent ?? "";
          if (text && seen[seen.length - 1] !== text) seen.push(text);
        }).observe(document.getElementById("activity") as Node, { childList: true, subtree: true, characterData: true });
      });
      await page.getByLabel(/^Message/).fill("hello from the browser");
      await page.getByLabel(/^Message/).press("Enter");
      await page.locator('[data-testid=sent-message][data-status="accepted"]').waitFor();
      // The gateway's message.queued event for it marks the line instead of repeating the text.
      await page.locator('[data-testid=sent-message][data-queued="true"]').waitFor();
      expect(await page.locator("#activity [data-testid=queued-message]").count()).toBe(0);

      const turn = turns().last();
      await turn.locator('[data-testid=turn-marker][data-outcome="completed"]').waitFor();
      expect(await turn.locator("[data-testid=stream-text]").allTextContents()).toEqual(["Echo: hello from the browser"]);
      // The turn names the per-channel settings it ran with.
      expect(await page.locator("#activity [data-testid=channel-settings]").last().textContent()).toContain("Channel settings: console-desk");
      const snapshots = await page.evaluate(() => (window as unknown as { streamSnapshots: string[] }).streamSnapshots);
      expect(snapshots[0]).toBe("Echo:");
      expect(snapshots.at(-1)).toBe("Echo: hello from the browser");
      expect(snapshots.length).toBeGreaterThanOrEqual(3);

      // The transcript reloads from the store: roles, content and the platform message id.
      const assistant = page.locator('#transcript [data-testid=message][data-role="assistant"]');
      await assistant.getByText("Echo: hello from the browser").waitFor();
      const user = page.locator('#transcript [data-testid=message][data-role="user"]').first();
      expect(await user.getByTestId("message-content").textContent()).toBe("hello from the browser");
      expect(await user.getByTestId("platform-message-id").textContent()).toMatch(/^id \S+/);

      // The list learns about the session from the gateway: source and state, without a reload.
      const row = page.locator(`[data-testid=session-row][data-session-id="${sessionId}"]`);
      await row.locator('[data-testid=session-source]', { hasText: "websocket" }).waitFor();
      await row.locator('[data-testid=session-state][data-state="idle"]').waitFor();
    });
  });

  it("interrupts a slow turn: the streamed text stops and the turn is marked interrupted", async () => {
    await step("interrupt", async () => {
      const before = await turns().count();
      const message = slowMessage("slow", 80);
      await page.getByLabel(/^Message/).fill(message);
      await page.getByRole("button", { name: "Send", exact: true }).click();

      const turn = turns().nth(before);
      // Text arrives piece by piece while the turn is still running.
      await turn.locator("[data-testid=stream-text]", { hasText: "w3" }).waitFor();
      expect(await turn.getAttribute("data-outcome")).toBe("running");
      const sessionId = (await page.getByTestId("session-title").textContent()) ?? "";
      const row = page.locator(`[data-testid=session-row][data-session-id="${sessionId}"]`);
      await row.locator('[data-testid=session-state][data-state="running"]').waitFor();

      await page.getByRole("button", { name: "Interrupt", exact: true }).click();
      await turn.locator('[data-testid=turn-marker][data-outcome="interrupted"]').waitFor({ timeout: 5_000 });
      const streamed = (await turn.locator("[data-testid=stream-text]").allTextContents()).join("");
      expect(streamed).toMatch(/^Echo: slow w1 w2 w3/);
      expect(streamed).not.toContain("w80");
      await row.locator('[data-testid=session-state][data-state="idle"]').waitFor();
    });
  });

  it("stops a slow turn with Stop", async () => {
    await step("stop", async () => {
      const before = await turns().count();
      await page.getByLabel(/^Message/).fill(slowMessage("halt", 80));
      await page.getByLabel(/^Message/).press("Enter");
      const turn = turns().nth(before);
      await turn.locator("[data-testid=stream-text]", { hasText: "w2" }).waitFor();
      await page.getByRole("button", { name: "Stop", exact: true }).click();
      await turn.locator('[data-testid=turn-marker][data-outcome="interrupted"]').waitFor({ timeout: 5_000 });
      expect((await turn.locator("[data-testid=stream-text]").allTextContents()).join("")).not.toContain("w80");
    });
  });

  it("lists a session another client starts, without a reload", async () => {
    await step("list", async () => {
      const otherId = `other-client-${Date.now()}`;
      const ws = new WebSocket(`${base.replace(/^http/, "ws")}/ws`, { headers: { Authorization: `Bearer ${KEY}` } });
      try {
        await new Promise<void>((resolve, reject) => {
          ws.once("open", () => resolve());
          ws.once("error", reject);
        });
        ws.send(JSON.stringify({ type: "send", session_id: otherId, text: "from elsewhere", client_message_id: "elsewhere-1" }));
        await page.locator(`[data-testid=session-row][data-session-id="${otherId}"]`).waitFor({ timeout: 6_000 });
      } finally {
        ws.close();
      }
      // And it opens from the list, with its transcript.
      await page.locator(`[data-testid=session-row][data-session-id="${otherId}"] [data-testid=session-open]`).click();
      await page.locator("#transcript [data-testid=message-content]", { hasText: "Echo: from elsewhere" }).waitFor();
    });
  });

  it("keeps the key and the open session across a reload", async () => {
    await step("reload", async () => {
      const sessionId = (await page.getByTestId("session-title").textContent()) ?? "";
      expect(sessionId).not.toBe("");
      await page.reload();
      await page.getByTestId("app").waitFor();
      expect(await page.getByTestId("key-panel").isVisible()).toBe(false);
      // The console opens the kept session after the app shows: its title comes with it.
      await expect.poll(() => page.getByTestId("session-title").textContent(), { timeout: UI_TIMEOUT_MS }).toBe(sessionId);
      await page.locator("#transcript [data-testid=message-content]", { hasText: "Echo: from elsewhere" }).waitFor();
    });
  });

  it("asks again when the key it kept is no longer accepted", async () => {
    await step("stale-key", async () => {
      await page.evaluate(() => sessionStorage.setItem("switchboard.apiKey", "a-key-that-was-rotated"));
      await page.reload();
      await page.getByTestId("key-error").getByText("no longer accepts").waitFor();
      expect(await page.getByTestId("app").isVisible()).toBe(false);
      expect(await page.evaluate(() => sessionStorage.getItem("switchboard.apiKey"))).toBeNull();
      await page.getByLabel("API key", { exact: true }).fill(KEY);
      await page.getByRole("button", { name: "Unlock", exact: true }).click();
      await page.locator('[data-testid=connection-status][data-state="connected"]').waitFor();
    });
  });

  it("lists a stranger's pairing code and approves it", async () => {
    await step("pairing", async () => {
      await gw.gateway.store.pairingCodeFor("telegram", "4242", "WXYZ-2345", 600);
      const row = page.locator('[data-testid=pairing-row][data-code="WXYZ-2345"]');
      await row.waitFor();
      expect(await row.textContent()).toContain("telegram:4242");
      await row.getByTestId("approve-pairing").click();
      await row.waitFor({ state: "detached" });
      expect(await gw.gateway.store.isPaired("telegram", "4242")).toBe(true);
      expect(await page.getByTestId("pairings").isHidden()).toBe(true);
    });
  });

  it("opens the queue dashboard from the console's link", async () => {
    await step("admin", async () => {
      const [dashboard] = await Promise.all([context.waitForEvent("page"), page.getByRole("link", { name: "Queue dashboard" }).click()]);
      try {
        await dashboard.waitForLoadState("domcontentloaded");
        expect(new URL(dashboard.url()).pathname).toBe("/admin/queues");
        await dashboard.getByText("deliveries", { exact: false }).first().waitFor({ timeout: UI_TIMEOUT_MS });
        await dashboard.getByText("turns", { exact: false }).first().waitFor({ timeout: UI_TIMEOUT_MS });
      } finally {
        await dashboard.close();
      }
    });
  });
});
