// Images in messages: what the gateway accepts (PNG, JPEG, GIF, WebP, known by their bytes, not
// by what a sender claims), the caps, and the one error type every media path reports with.

/** What the model providers take (the OpenAI image types). */
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];

export interface MediaSettings {
  /** Largest image, in bytes (decoded). */
  maxImageBytes: number;
  /** Largest total of one message's images, in bytes. */
  maxMessageBytes: number;
  /** Most images one message may carry. */
  maxImagesPerMessage: number;
  /** How long one download may take. */
  fetchTimeoutMs: number;
  /**
   * Let the API fetch `http://127.0.0.1` (and other loopback) image URLs. For tests against local
   * servers only; never on by default (the API otherwise fetches public https URLs only).
   */
  allowHttpLoopback: boolean;
}

export const DEFAULT_MEDIA_SETTINGS: MediaSettings = {
  maxImageBytes: 5 * 1024 * 1024,
  maxMessageBytes: 10 * 1024 * 1024,
  maxImagesPerMessage: 10,
  fetchTimeoutMs: 15_000,
  allowHttpLoopback: false,
};

export type MediaErrorCode = "too_large" | "unsupported_type" | "invalid_image" | "blocked_url" | "fetch_failed";

/** A media problem, with a reason a user can read. */
export class MediaError extends Error {
  constructor(
    readonly code: MediaErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "MediaError";
  }
}

/** The image type the bytes are, or null when they are none of IMAGE_TYPES. */
export function sniffImageType(data: Uint8Array): ImageType | null {
  const starts = (...bytes: number[]): boolean => bytes.every((b, i) => data[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38) && (data[4] === 0x37 || data[4] === 0x39) && data[5] === 0x61) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && data[8] === 0x57 && data[9] === 0x45 && data[10] === 0x42 && data[11] === 0x50) return "image/webp";
  return null;
}

/** "1.2 KB", "3.4 MB", "512 B" (1 KB = 1024 bytes). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export interface CheckedImage {
  content_type: ImageType;
  name: string | null;
  data: Uint8Array;
}

/** The image if its bytes are one of IMAGE_TYPES within the per-image cap; a MediaError otherwise. */
export function checkImage(data: Uint8Array, settings: Pick<MediaSettings, "maxImageBytes">, name: string | null = null): CheckedImage {
  const label = name ? `image ${name}` : "image";
  if (data.byteLength > settings.maxImageBytes) {
    throw new MediaError("too_large", `${label} is ${formatBytes(data.byteLength)}, more than the ${formatBytes(settings.maxImageBytes)} allowed per image`);
  }
  if (data.byteLength === 0) throw new MediaError("invalid_image", `${label} is empty`);
  const type = sniffImageType(data);
  if (!type) throw new MediaError("unsupported_type", `${label} is not a PNG, JPEG, GIF or WebP image`);
  return { content_type: type, name, data };
}

/** A MediaError when the images together pass the per-message caps. */
export function checkMessageImages(images: ReadonlyArray<{ data: Uint8Array }>, settings: Pick<MediaSettings, "maxMessageBytes" | "maxImagesPerMessage">): void {
  if (images.length > settings.maxImagesPerMessage) {
    throw new MediaError("too_large", `${images.length} images in one message; at most ${settings.maxImagesPerMessage} are allowed`);
  }
  const total = images.reduce((sum, image) => sum + image.data.byteLength, 0);
  if (total > settings.maxMessageBytes) {
    throw new MediaError("too_large", `the message's images are ${formatBytes(total)} together, more than the ${formatBytes(settings.maxMessageBytes)} allowed per message`);
  }
}
