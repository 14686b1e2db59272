// The secrets the corpus gateway runs with, and signers that use them the way each platform does.
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { githubSignature, standardSignature } from "../../src/adapters/webhook/signing.js";
import { slackSignature } from "../../src/adapters/slack/signature.js";
import { whatsappSignature } from "../../src/adapters/whatsapp/signature.js";

export const API_KEY = "corpus-api-key";
export const SLACK_SECRET = "corpus-slack-signing-secret";
export const TELEGRAM_TOKEN = "7012345678:AAHcorpusCorpusCorpusCorpusCorpus00";
export const TELEGRAM_SECRET = "corpus-telegram-secret_01";
export const GITHUB_SECRET = "corpus-github-secret";
export const STANDARD_SECRET = `whsec_${Buffer.from("corpus-standard-secret-32-bytes!").toString("base64")}`;
export const WHATSAPP_APP_SECRET = "corpus-whatsapp-app-secret";
export const WHATSAPP_VERIFY_TOKEN = "corpus-whatsapp-verify-token";
export const WHATSAPP_PHONE_NUMBER_ID = "106540352242922";
/** Small on purpose: the "text too long" cases stay small bodies. */
export const MAX_MESSAGE_CHARS = 2000;

function ed25519(): { privateKey: KeyObject; publicHex: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return { privateKey, publicHex: Buffer.from(jwk.x as string, "base64url").toString("hex") };
}

export const discordKeys = ed25519();
/** A key Discord never issued to this application. */
export const strangerKeys = ed25519();

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

export function slackHeaders(body: string, timestamp = String(nowSeconds()), secret = SLACK_SECRET): Record<string, string> {
  return { "x-slack-request-timestamp": timestamp, "x-slack-signature": slackSignature(secret, timestamp, body) };
}

export function discordHeaders(body: string, timestamp = String(nowSeconds()), key: KeyObject = discordKeys.privateKey): Record<string, string> {
  const signature = sign(null, Buffer.concat([Buffer.from(timestamp), Buffer.from(body)]), key).toString("hex");
  return { "x-signature-ed25519": signature, "x-signature-timestamp": timestamp };
}

export function githubHeaders(body: string, delivery?: string, secret = GITHUB_SECRET): Record<string, string> {
  return { "x-hub-signature-256": githubSignature(secret, body), ...(delivery ? { "x-github-delivery": delivery } : {}) };
}

export function whatsappHeaders(body: string, secret = WHATSAPP_APP_SECRET): Record<string, string> {
  return { "x-hub-signature-256": whatsappSignature(secret, body) };
}

export function standardHeaders(body: string, id: string, timestamp = String(nowSeconds())): Record<string, string> {
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": standardSignature(STANDARD_SECRET, id, timestamp, body) };
}

export const configYaml = `max_message_chars: ${MAX_MESSAGE_CHARS}
webhooks:
  gh:
    secret: ${GITHUB_SECRET}
    style: github
    reply: sync
  std:
    secret: ${STANDARD_SECRET}
    style: standard
    reply: sync
`;
