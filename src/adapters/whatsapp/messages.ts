// One WhatsApp message -> an InboundMessage, or why it is not a turn.
//
// Text: `text.body`; the caption of an image, video or document (its media id, type and file
// name go to the display metadata, and the media becomes a reference the adapter downloads when
// the turn runs: the gateway keeps images and says why it left anything else out); the title of
// a tapped button or list row.
// Rejected (recorded with the reason, never answered): a person wrote, but nothing in it is text
// the model could answer — voice notes, stickers, locations, contacts, media without a caption,
// types the Cloud API itself reports as unsupported. Recording them keeps the promise that
// nothing a person sent disappears without a trace.
// Ignored (not recorded): reactions and system notices (a number change, the first-contact
// welcome request): nobody asked anything, and answering them would be noise.
import type { InboundMessage, MediaRef } from "../../gateway/types.js";
import type { WhatsAppMessage } from "./payload.js";

const IGNORED_TYPES: Record<string, string> = {
  reaction: "a reaction is not a message to answer",
  system: "a system notice is not a message to answer",
  request_welcome: "a welcome request is not a message to answer",
};

const CAPTIONED_MEDIA = ["image", "video", "document"] as const;
type CaptionedMedia = (typeof CAPTIONED_MEDIA)[number];

export type WhatsAppMessageDecision =
  | { kind: "accept"; message: InboundMessage }
  | { kind: "reject"; message: InboundMessage; reason: string }
  | { kind: "ignore"; reason: string };

export interface WhatsAppMessageContext {
  /** The business number the message was sent to. */
  phoneNumberId: string;
  displayPhoneNumber: string | null;
  /** The sender's profile name, from the payload's contacts. */
  profileName: string | null;
  now: number;
}

export function whatsappSessionKey(phoneNumberId: string, from: string): string {
  return `whatsapp:${phoneNumberId}:${from}`;
}

export function classifyWhatsAppMessage(message: WhatsAppMessage, ctx: WhatsAppMessageContext): WhatsAppMessageDecision {
  const ignored = IGNORED_TYPES[message.type];
  if (ignored) return { kind: "ignore", reason: ignored };
  const { text, extra } = textOf(message);
  const attachments = mediaRefsOf(message);
  const inbound: InboundMessage = {
    platform: "whatsapp",
    platformMessageId: message.id,
    sessionKey: whatsappSessionKey(ctx.phoneNumberId, message.from),
    chatId: message.from,
    threadId: null,
    userId: message.from,
    text: text ?? "",
    ...(attachments.length > 0 ? { attachments } : {}),
    displayKind: `whatsapp_${message.type}`,
    displayMetadata: {
      phone_number_id: ctx.phoneNumberId,
      display_phone_number: ctx.displayPhoneNumber,
      from: message.from,
      profile_name: ctx.profileName,
      wamid: message.id,
      type: message.type,
      timestamp: message.timestamp ?? null,
      ...(message.context?.id ? { context: { from: message.context.from ?? null, id: message.context.id } } : {}),
      ...extra,
    },
    receivedAt: ctx.now,
    replyTarget: { phone_number_id: ctx.phoneNumberId, to: message.from, message_id: message.id },
  };
  if (text === null || text.trim() === "") return { kind: "reject", message: inbound, reason: rejectionReason(message) };
  return { kind: "accept", message: inbound };
}

function textOf(message: WhatsAppMessage): { text: string | null; extra: Record<string, unknown> } {
  switch (message.type) {
    case "text":
      return { text: message.text?.body ?? null, extra: {} };
    case "button":
      return { text: message.button?.text ?? null, extra: { button_payload: message.button?.payload ?? null } };
    case "interactive": {
      const choice = message.interactive?.button_reply ?? message.interactive?.list_reply;
      return { text: choice?.title ?? null, extra: { interactive: { type: message.interactive?.type ?? null, id: choice?.id ?? null } } };
    }
    default:
      if (isCaptionedMedia(message.type)) {
        const media = message[message.type];
        const extra = media
          ? { media: { id: media.id, mime_type: media.mime_type ?? null, sha256: media.sha256 ?? null, filename: media.filename ?? null } }
          : {};
        return { text: media?.caption ?? null, extra };
      }
      return { text: null, extra: mediaOf(message) };
  }
}

/** The captioned media as a reference for the adapter's fetchMedia (a media id, looked up then). */
function mediaRefsOf(message: WhatsAppMessage): MediaRef[] {
  if (!isCaptionedMedia(message.type)) return [];
  const media = message[message.type];
  if (!media?.id) return [];
  const ref: MediaRef = { id: media.id, name: media.filename ?? message.type };
  if (media.mime_type) ref.contentType = media.mime_type;
  return [ref];
}

/** Voice notes and stickers keep their media id in the display metadata too. */
function mediaOf(message: WhatsAppMessage): Record<string, unknown> {
  const media = message.type === "audio" ? message.audio : message.type === "sticker" ? message.sticker : undefined;
  return media ? { media: { id: media.id, mime_type: media.mime_type ?? null } } : {};
}

function isCaptionedMedia(type: string): type is CaptionedMedia {
  return (CAPTIONED_MEDIA as readonly string[]).includes(type);
}

function rejectionReason(message: WhatsAppMessage): string {
  if (isCaptionedMedia(message.type)) return `WhatsApp ${message.type} without a caption: no text to answer`;
  if (message.type === "unsupported") {
    const title = message.errors?.[0]?.title;
    return `WhatsApp reports the message type as unsupported${title ? ` (${title})` : ""}`;
  }
  if (message.type === "text" || message.type === "button" || message.type === "interactive") {
    return `WhatsApp ${message.type} message without text`;
  }
  return `WhatsApp ${message.type} messages carry no text to answer`;
}
