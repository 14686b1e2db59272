// The console page and the queue dashboard over real HTTP: what a browser gets, checked with fetch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../support/gateway.js";

const KEY = "console-test-key";

let gw: TestGateway;
let base: string;

beforeAll(async () => {
  gw = await startTestGateway({ workers: false, env: { SWITCHBOARD_API_KEY: KEY } });
  base = gw.gateway.url as string;
});

afterAll(async () => {
  await gw?.stop();
});

/** The `name=value` of a Set-Cookie header and its attributes, lower-cased. */
function parseSetCookie(header: string): { pair: string; attributes: string[] } {
  const [pair, ...attributes] = header.split(";").map((p) => p.trim());
  return { pair, attributes: attributes.map((a) => a.toLowerCase()) };
}

describe("the console page", () => {
  it("is served without the key and tells the script a key is required", async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain('data-api-key-required="true"');
    expect(html).toContain('<script type="module" src="/console.js">');
    for (const id of ["api-key-input", "session-list", "message-input", "interrupt-button", "stop-button", "new-session-button"]) {
      expect(html).toContain(`id="${id}"`);
    }
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
  });

  it("serves its script as JavaScript", async () => {
    const res = await fetch(`${base}/console.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/javascript/);
    const js = await res.text();
    expect(js).toContain("/api/sessions");
    expect(js).toContain('"subscribe"');
  });

  it("keeps the API itself behind the key", async () => {
    expect((await fetch(`${base}/api/sessions`)).status).toBe(401);
    const ok = await fetch(`${base}/api/sessions`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toHaveProperty("sessions");
  });
});

describe("/admin/queues", () => {
  it("refuses a request without the key", async () => {
    expect((await fetch(`${base}/admin/queues`)).status).toBe(401);
    expect((await fetch(`${base}/admin/queues/api/queues`)).status).toBe(401);
  });

  it("refuses a wrong ?token= and sets no cookie", async () => {
    const res = await fetch(`${base}/admin/queues?token=wrong`, { redirect: "manual" });
    expect(res.status).toBe(401);
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it("turns ?token= into an HttpOnly, SameSite=Strict cookie for /admin and drops the token from the address", async () => {
    const res = await fetch(`${base}/admin/queues?token=${KEY}&x=1`, { redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/admin/queues?x=1");
    const cookies = res.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    const { pair, attributes } = parseSetCookie(cookies[0]);
    expect(pair).toBe(`switchboard_token=${KEY}`);
    expect(attributes).toEqual(expect.arrayContaining(["path=/admin", "httponly", "samesite=strict"]));

    // A browser then loads the dashboard and its API with the cookie alone.
    const page = await fetch(`${base}/admin/queues`, { headers: { Cookie: pair } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(await page.text()).toContain("Switchboard queues");

    const api = await fetch(`${base}/admin/queues/api/queues`, { headers: { Cookie: pair } });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: Array<{ name: string }> };
    expect(body.queues.map((q) => q.name).sort()).toEqual(["deliveries", "turns"]);
  });

  it("refuses a wrong cookie", async () => {
    const res = await fetch(`${base}/admin/queues/api/queues`, { headers: { Cookie: "switchboard_token=nope" } });
    expect(res.status).toBe(401);
  });

  it("gives the console the cookie on POST /admin/session with the key as Bearer, and takes it back on DELETE", async () => {
    expect((await fetch(`${base}/admin/session`, { method: "POST" })).status).toBe(401);
    expect((await fetch(`${base}/admin/session`, { method: "POST", headers: { Authorization: "Bearer wrong" } })).status).toBe(401);

    const res = await fetch(`${base}/admin/session`, { method: "POST", headers: { Authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(204);
    const { pair, attributes } = parseSetCookie(res.headers.getSetCookie()[0] ?? "");
    expect(pair).toBe(`switchboard_token=${KEY}`);
    expect(attributes).toEqual(expect.arrayContaining(["path=/admin", "httponly", "samesite=strict"]));
    expect((await fetch(`${base}/admin/queues`, { headers: { Cookie: pair } })).status).toBe(200);

    const cleared = await fetch(`${base}/admin/session`, { method: "DELETE", headers: { Cookie: pair } });
    expect(cleared.status).toBe(204);
    const gone = parseSetCookie(cleared.headers.getSetCookie()[0] ?? "");
    expect(gone.pair).toBe("switchboard_token=");
    expect(gone.attributes).toEqual(expect.arrayContaining(["max-age=0", "path=/admin"]));
  });
});

describe("without an API key", () => {
  it("tells the console no key is needed and opens the dashboard directly", async () => {
    const open = await startTestGateway({ workers: false });
    try {
      const url = open.gateway.url as string;
      expect(await (await fetch(`${url}/`)).text()).toContain('data-api-key-required="false"');
      expect((await fetch(`${url}/admin/queues`)).status).toBe(200);
      const session = await fetch(`${url}/admin/session`, { method: "POST" });
      expect(session.status).toBe(204);
      expect(session.headers.getSetCookie()).toEqual([]);
    } finally {
      await open.stop();
    }
  });
});
