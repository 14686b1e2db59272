// A crash between sending a reply and recording it: the delivery is found in 'sending', sent
// again once, and marked as a possible duplicate so people can tell.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POSSIBLE_DUPLICATE_NOTE } from "../../src/adapters/index.js";
import { deliveryJobId } from "../../src/gateway/queues.js";
import { FakeSlack } from "../support/fake-slack.js";
import { startTestGateway, waitFor, type TestGateway } from "../support/gateway.js";
import { SLACK_BOT, SLACK_SECRET, SLACK_TOKEN } from "./support/slack.js";

describe("a delivery interrupted between send and record", () => {
  let fake: FakeSlack;
  let gw: TestGateway;
  beforeAll(async () => {
    fake = await FakeSlack.start({ botToken: SLACK_TOKEN, botUserId: SLACK_BOT });
    gw = await startTestGateway({ env: { SLACK_SIGNING_SECRET: SLACK_SECRET, SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_API_URL: fake.url, LOG_LEVEL: "silent" } });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it("is resent once, marked as a possible duplicate, and recorded as sent", async () => {
    const { store, queues } = gw.gateway;
    const sessionId = "delivery-crash-session";
    await store.createSession(sessionId, { source: "slack" });
    const [id] = await store.createDeliveries([
      { platform: "slack", sessionId, target: { team: "T0TEAM00001", channel: "C0CRASH0001", thread_ts: "1718900000.000100" }, text: "the answer" },
    ]);
    // The worker that claimed it died before recording the send.
    expect((await store.claimDelivery(id))?.status).toBe("sending");
    await queues.deliveries.add("deliver", { deliveryId: id }, { jobId: deliveryJobId(id) });

    const row = await waitFor(async () => {
      const r = await store.getDelivery(id);
      return r?.status === "sent" ? r : null;
    }, 15_000, "the delivery to be sent");
    expect(row.possible_duplicate).toBe(true);
    expect(row.attempts).toBe(2);
    const posted = fake.messagesIn("C0CRASH0001");
    expect(posted).toHaveLength(1);
    expect(posted[0].text).toContain("the answer");
    expect(posted[0].text).toContain(POSSIBLE_DUPLICATE_NOTE);
    expect(posted[0].thread_ts).toBe("1718900000.000100");
  }, 30_000);
});
