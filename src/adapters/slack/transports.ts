// How Slack's events reach the gateway: the Events API over signed HTTP routes (with a signing
// secret) and/or Socket Mode (with an app-level token). Both hand each event to the same intake.
import type { Logger } from "pino";
import type { GatewayIngress, PlatformAdapter } from "../../gateway/types.js";
import type { SlackConfig } from "./config.js";
import { slackEventsAnswer } from "./events-answer.js";
import { createSlackIntake, type SlackIntakeContext } from "./intake.js";
import { slackRoutes } from "./routes.js";
import { createSocketEnvelopeHandler } from "./socket-envelopes.js";
import type { SlackSocketMode } from "./socket-mode.js";

export interface SlackTransportsDeps {
  intakeContext: SlackIntakeContext;
  /** Slack's Web API base URL, normalised (Socket Mode asks it for its WebSocket URL). */
  apiUrl: string;
  bodyLimitBytes: number;
  logger: Logger;
  now: () => number;
}

export type SlackTransports = Pick<PlatformAdapter, "routes" | "plainRoutes" | "requestRules" | "start" | "stop">;

export function slackTransports(config: SlackConfig, deps: SlackTransportsDeps): SlackTransports {
  const { intakeContext, apiUrl, logger, now } = deps;
  const signingSecret = config.signingSecret ?? null;
  const appToken = config.appToken ?? null;
  let socketMode: SlackSocketMode | null = null;

  return {
    routes: signingSecret
      ? (ingress: GatewayIngress) =>
          slackRoutes({
            signingSecret,
            bodyLimitBytes: deps.bodyLimitBytes,
            logger,
            now,
            intake: createSlackIntake(ingress, intakeContext),
          })
      : undefined,

    requestRules: signingSecret ? () => [{ path: "/slack/events" }, { path: "/slack/commands" }] : undefined,

    // The events route again, for the HTTP server to answer without Express (the hot path).
    plainRoutes: signingSecret
      ? (ingress: GatewayIngress) => [
          {
            path: "/slack/events",
            bodyLimitBytes: deps.bodyLimitBytes,
            answer: slackEventsAnswer({ signingSecret, logger, now, intake: createSlackIntake(ingress, intakeContext) }),
          },
        ]
      : undefined,

    // Socket Mode connects in the background and keeps reconnecting: Slack being unreachable
    // must not keep the gateway from starting. Its SDK (and the WebSocket client under it) is
    // loaded only here: a gateway on the Events API alone does not hold it in memory.
    start: appToken
      ? async (ingress: GatewayIngress) => {
          await socketMode?.stop();
          const { startSlackSocketMode } = await import("./socket-mode.js");
          socketMode = startSlackSocketMode({
            appToken,
            apiUrl,
            logger,
            onEnvelope: createSocketEnvelopeHandler(createSlackIntake(ingress, intakeContext), logger),
          });
        }
      : undefined,

    async stop() {
      await socketMode?.stop();
      socketMode = null;
    },
  };
}
