// Discord interactions as Discord sends them: fixture payloads with fresh ids and tokens, signed
// with Ed25519 over timestamp + body by a key pair the test owns.
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { fixtureJson, uniqueToken } from "./fixtures.js";

export const DISCORD_APPLICATION_ID = "1200000000000000001";

export interface DiscordKeys {
  privateKey: KeyObject;
  /** The raw 32-byte public key in hex, as DISCORD_PUBLIC_KEY. */
  publicKeyHex: string;
}

export function discordKeyPair(): DiscordKeys {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return { privateKey, publicKeyHex: Buffer.from(jwk.x as string, "base64url").toString("hex") };
}

export function signInteraction(privateKey: KeyObject, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    "x-signature-ed25519": sign(null, Buffer.from(timestamp + body), privateKey).toString("hex"),
    "x-signature-timestamp": timestamp,
  };
}

let sequence = 0;

function snowflake(): string {
  sequence += 1;
  return String(((BigInt(Date.now()) - 1420070400000n) << 22n) | BigInt(sequence & 0xfff));
}

export interface AskInteraction {
  body: string;
  id: string;
  token: string;
  question: string;
}

/** `/ask text:<question>` in a guild channel, with its own interaction id and token. */
export function askInteraction(question: string): AskInteraction {
  const interaction = fixtureJson<Record<string, unknown> & { data: { options: Array<Record<string, unknown>> } }>(
    "discord",
    "interaction_ask_guild.json",
  );
  const id = snowflake();
  const token = `aW50ZXJhY3Rpb24${uniqueToken()}`;
  interaction.id = id;
  interaction.token = token;
  interaction.data.options = [{ name: "text", type: 3, value: question }];
  return { body: JSON.stringify(interaction), id, token, question };
}

export function pingInteraction(): string {
  return JSON.stringify({ ...fixtureJson("discord", "interaction_ping.json"), id: snowflake() });
}

export async function postInteraction(baseUrl: string, body: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${baseUrl}/discord/interactions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    signal: AbortSignal.timeout(5_000),
  });
}
