// Streams a reply as one message that is edited as text arrives: the first text is posted once
// (after firstPostDelayMs), later text goes out as edits at most once per interval, and finish()
// makes one last edit with the full text. Never a burst of messages, never two requests in flight
// at once. A reply that is done before its first post would go out is never posted here: close()
// then returns no message id, and the caller sends the final text as one message.
import { RateLimitedError } from "../../gateway/types.js";

/** What the editor needs from a platform. */
export interface MessageSink {
  /** Posts a new message; returns its platform id. */
  post(text: string): Promise<string>;
  edit(messageId: string, text: string): Promise<void>;
}

export interface ThrottledEditorOptions {
  /** At most one edit per this many milliseconds. */
  intervalMs: number;
  /**
   * How long the first text waits before it is posted (default 0: at once). A reply finished
   * within it costs one request (the caller's final post) instead of a post and an edit.
   */
  firstPostDelayMs?: number;
  /** Longest text a preview may show; previews are cut with an ellipsis (finish() sends it all). */
  maxPreviewLength?: number;
  /** Called for preview failures, which are not fatal (finish() retries with the full text). */
  onPreviewError?: (error: unknown) => void;
}

export interface FinishedStream {
  messageId: string | null;
  text: string;
  /** What the posted message shows now (null: nothing posted, or no request succeeded). */
  shownText: string | null;
}

export class ThrottledEditor {
  private text = "";
  private sentText: string | null = null;
  private messageId: string | null = null;
  private inFlight: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastSendAt = Number.NEGATIVE_INFINITY;
  private notBefore = 0;
  /** When the first text arrived: the first post waits firstPostDelayMs from here. */
  private firstTextAt: number | null = null;
  private finished = false;
  /** The edit showFinal() makes, which close() waits for as for a preview in flight. */
  private finalEdit: Promise<void> | null = null;

  constructor(
    private readonly sink: MessageSink,
    private readonly options: ThrottledEditorOptions,
  ) {}

  /** The posted message's id, once the first post succeeded. */
  get postedMessageId(): string | null {
    return this.messageId;
  }

  /** The text so far. */
  get currentText(): string {
    return this.text;
  }

  push(delta: string): void {
    if (this.finished) throw new Error("ThrottledEditor: push after finish");
    if (delta === "") return;
    this.text += delta;
    this.firstTextAt ??= Date.now();
    this.schedule();
  }

  /** Replaces the whole text (for sources that report snapshots rather than deltas). */
  set(text: string): void {
    if (this.finished) throw new Error("ThrottledEditor: set after finish");
    this.text = text;
    if (text !== "") this.firstTextAt ??= Date.now();
    this.schedule();
  }

  /**
   * Stops previews and makes sure the platform shows `finalText` (default: the streamed text):
   * one post when nothing was posted yet, else one edit when the shown text differs.
   * Errors of this last request propagate.
   */
  async finish(finalText?: string): Promise<FinishedStream> {
    if (finalText !== undefined) this.text = finalText;
    await this.close();
    if (this.text === "" && this.messageId === null) return { messageId: null, text: "", shownText: null };
    if (this.messageId === null) {
      this.messageId = await this.sink.post(this.text);
    } else if (this.sentText !== this.text) {
      await this.sink.edit(this.messageId, this.text);
    }
    this.sentText = this.text;
    return { messageId: this.messageId, text: this.text, shownText: this.sentText };
  }

  /**
   * The whole text is known (the model is done): show it now in the posted message, in one edit
   * that does not wait for the interval, while the caller records it. Nothing when nothing was
   * posted or is being posted (the caller's final post sends it). A text too long for a preview
   * is shown cut, as previews are; the caller's delivery sends it whole.
   */
  showFinal(text: string): void {
    if (this.finished) return;
    this.text = text;
    this.stopPreviews();
    if (this.messageId === null && !this.inFlight) return;
    const previous = this.inFlight;
    this.finalEdit = (async () => {
      if (previous) await previous.catch(() => undefined);
      const preview = this.preview();
      if (this.messageId === null || preview === this.sentText) return;
      await this.sendPreview(preview);
    })();
  }

  /**
   * Stops the stream now when it has posted nothing and no post is in flight: true, and it never
   * posts (the final text goes out as one message that nothing else edits). False when a post
   * went out or is on its way; the stream then goes on as before.
   */
  closeIfUnposted(): boolean {
    if (this.messageId !== null || this.inFlight) return false;
    this.stopPreviews();
    return true;
  }

  /**
   * Stops previews without a final edit (when the final text goes out another way, e.g. a
   * delivery that edits `postedMessageId`). Waits for a request in flight.
   */
  async close(): Promise<FinishedStream> {
    this.stopPreviews();
    while (this.inFlight) await this.inFlight;
    if (this.finalEdit) await this.finalEdit;
    return { messageId: this.messageId, text: this.text, shownText: this.messageId === null ? null : this.sentText };
  }

  /** No preview is scheduled or sent from now on. */
  private stopPreviews(): void {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.finished || this.timer || this.inFlight) return;
    const firstPostAt = this.messageId === null && this.firstTextAt !== null ? this.firstTextAt + (this.options.firstPostDelayMs ?? 0) : 0;
    const earliest = Math.max(this.lastSendAt + this.options.intervalMs, this.notBefore, firstPostAt);
    // The first text goes out after firstPostDelayMs; after that (and after a failed attempt) wait the interval.
    const wait = Math.max(0, earliest - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, wait);
  }

  private flush(): void {
    if (this.finished || this.inFlight) return;
    const preview = this.preview();
    if (preview === this.sentText) return;
    this.lastSendAt = Date.now();
    this.inFlight = this.sendPreview(preview).finally(() => {
      this.inFlight = null;
      if (this.preview() !== this.sentText) this.schedule();
    });
  }

  private async sendPreview(preview: string): Promise<void> {
    try {
      if (this.messageId === null) {
        this.messageId = await this.sink.post(preview);
      } else {
        await this.sink.edit(this.messageId, preview);
      }
      this.sentText = preview;
    } catch (error) {
      if (error instanceof RateLimitedError) this.notBefore = Date.now() + error.retryAfterMs;
      this.options.onPreviewError?.(error);
    }
  }

  private preview(): string {
    const max = this.options.maxPreviewLength;
    if (max === undefined || this.text.length <= max) return this.text;
    return `${this.text.slice(0, max - 1)}…`;
  }
}
