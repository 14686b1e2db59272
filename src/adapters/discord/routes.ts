// POST /discord/interactions: Ed25519-verified; PING answered with PONG; a command is recorded
// through the gateway and answered with a deferred response (the reply follows as a follow-up).
import { Router } from "express";
import type { KeyObject } from "node:crypto";
import type { Logger } from "pino";
import type { AcceptResult, GatewayIngress } from "../../gateway/types.js";
import { sendError } from "../../gateway/http-errors.js";
import { postRoute, readRawBody } from "../shared/http.js";
import {
  EPHEMERAL,
  INTERACTION_RESPONSE,
  INTERACTION_TYPE,
  InteractionSchema,
  normaliseInteractionCommand,
} from "./interactions.js";
import { verifyDiscordSignature } from "./signature.js";

export const DISCORD_INTERACTIONS_PATH = "/discord/interactions";

export interface DiscordRouteContext {
  publicKey: KeyObject;
  bodyLimitBytes: number;
  logger: Logger;
  now: () => number;
}

export function discordRoutes(ingress: GatewayIngress, ctx: DiscordRouteContext): Router {
  const router = Router();
  const log = ctx.logger;
  const ephemeral = (content: string) => ({
    type: INTERACTION_RESPONSE.ChannelMessage,
    data: { content, flags: EPHEMERAL, allowed_mentions: { parse: [] } },
  });

  postRoute(router, DISCORD_INTERACTIONS_PATH, ctx, async (req, res) => {
    const raw = readRawBody(req);
    const check = verifyDiscordSignature(
      ctx.publicKey,
      { signature: req.get("x-signature-ed25519"), timestamp: req.get("x-signature-timestamp") },
      raw,
    );
    if (!check.ok) {
      log.warn({ reason: check.reason }, "discord interaction refused");
      sendError(res, "invalid_signature", check.reason);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString("utf8"));
    } catch {
      sendError(res, "malformed_request", "body is not JSON");
      return;
    }
    const parsed = InteractionSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      sendError(res, "malformed_request", `invalid interaction: ${issue?.path.join(".") || "body"}: ${issue?.message ?? "invalid"}`);
      return;
    }
    const interaction = parsed.data;
    if (interaction.type === INTERACTION_TYPE.Ping) {
      res.status(200).json({ type: INTERACTION_RESPONSE.Pong });
      return;
    }
    if (interaction.type !== INTERACTION_TYPE.ApplicationCommand) {
      res.status(200).json(ephemeral("This interaction is not supported."));
      return;
    }
    const decision = normaliseInteractionCommand(interaction, ctx.now());
    if (decision.kind === "reply") {
      res.status(200).json(ephemeral(decision.content));
      return;
    }
    let result: AcceptResult;
    try {
      result = await ingress.accept(decision.message);
    } catch (error) {
      // Discord does not redeliver interactions: tell the user instead of failing silently.
      log.error({ err: error, interactionId: interaction.id }, "discord interaction could not be recorded");
      res.status(200).json(ephemeral("Sorry, your message could not be recorded. Please try again."));
      return;
    }
    if (result.status === "rejected") {
      log.warn({ interactionId: interaction.id, reason: result.reason }, "discord interaction rejected by the gateway");
      res.status(200).json(ephemeral(`Not accepted: ${result.reason}`));
      return;
    }
    log.debug({ interactionId: interaction.id, status: result.status }, "discord interaction recorded");
    res.status(200).json({ type: INTERACTION_RESPONSE.DeferredChannelMessage });
  });

  return router;
}
