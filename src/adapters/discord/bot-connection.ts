// The Discord bot's gateway connection, kept up from start() to stop(). Discord being unreachable
// must not keep the gateway from starting: it connects in the background and retries with
// backoff (interactions and replies work meanwhile).
import type { Logger } from "pino";
import type { ThreadMemory } from "../../bus/thread-memory.js";
import type { GatewayIngress } from "../../gateway/types.js";
import { startDiscordGatewayClient, type DiscordGatewayClient } from "./gateway-client.js";

export interface DiscordBotConnectionDeps {
  token: string;
  apiUrl: string;
  threads: ThreadMemory;
  logger: Logger;
  allowedBots: ReadonlySet<string>;
}

export interface DiscordBotConnection {
  start(ingress: GatewayIngress): Promise<void>;
  stop(): Promise<void>;
}

export function discordBotConnection({ token, apiUrl, threads, logger, allowedBots }: DiscordBotConnectionDeps): DiscordBotConnection {
  let gateway: DiscordGatewayClient | null = null;
  let stopped = false;
  let reconnectTimer: NodeJS.Timeout | null = null;

  return {
    async start(ingress) {
      stopped = false;
      const connect = async (attempt: number): Promise<void> => {
        try {
          const client = await startDiscordGatewayClient({ token, apiUrl, ingress, threads, logger, allowedBots });
          if (stopped) await client.stop();
          else gateway = client;
        } catch (error) {
          if (stopped) return;
          const delayMs = Math.min(300_000, 5_000 * 2 ** attempt);
          logger.warn({ err: (error as Error).message, retryInMs: delayMs }, "discord gateway connection failed; retrying");
          reconnectTimer = setTimeout(() => void connect(attempt + 1), delayMs);
          reconnectTimer.unref();
        }
      };
      void connect(0);
    },

    async stop() {
      stopped = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = null;
      await gateway?.stop();
      gateway = null;
    },
  };
}
