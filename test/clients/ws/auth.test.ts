import { afterEach, describe, expect, it } from "vitest";
import { connect } from "node:net";
import { startHub, TOKEN, upgradeStatus, type HubFixture } from "./helpers.js";

let fixture: HubFixture | null = null;
afterEach(async () => {
  await fixture?.close();
  fixture = null;
});

describe("WebSocket upgrade authentication", () => {
  it("refuses a client without a token with 401", async () => {
    fixture = await startHub();
    expect(await upgradeStatus(fixture.url(""))).toBe(401);
    expect(fixture.hub.clientCount).toBe(0);
  });

  it("refuses a wrong token, in the query or as a bearer header, with 401", async () => {
    fixture = await startHub();
    expect(await upgradeStatus(fixture.url("token=wrong"))).toBe(401);
    expect(await upgradeStatus(fixture.url(""), { Authorization: "Bearer wrong" })).toBe(401);
    expect(await upgradeStatus(fixture.url(""), { Authorization: `Basic ${TOKEN}` })).toBe(401);
  });

  it("accepts the token as ?token= and as Authorization: Bearer", async () => {
    fixture = await startHub();
    expect(await upgradeStatus(fixture.url(`token=${TOKEN}`))).toBe(101);
    expect(await upgradeStatus(fixture.url(""), { Authorization: `Bearer ${TOKEN}` })).toBe(101);
  });

  it("answers 401 with a JSON error body and a WWW-Authenticate header, then closes", async () => {
    fixture = await startHub();
    const port = fixture.port;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.write(
          "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        );
      });
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (text += chunk));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
      socket.setTimeout(3000, () => reject(new Error("the server did not close the refused socket")));
    });
    const [head, body] = raw.split("\r\n\r\n");
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
    expect(head).toMatch(/^WWW-Authenticate: Bearer/im);
    expect(JSON.parse(body)).toMatchObject({ error: { code: "unauthorized" } });
  });

  it("serves only /ws", async () => {
    fixture = await startHub();
    expect(await upgradeStatus(`ws://127.0.0.1:${fixture.port}/other?token=${TOKEN}`)).toBe(404);
  });
});
