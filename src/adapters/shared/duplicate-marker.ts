// How a resend that may repeat an earlier message shows itself to chat users.

/** Appended (as an italic line) to chat replies whose earlier attempt may already have arrived. */
export const POSSIBLE_DUPLICATE_NOTE = "_(resent: this may repeat an earlier reply)_";

export function markPossibleDuplicate(text: string): string {
  return `${text}\n\n${POSSIBLE_DUPLICATE_NOTE}`;
}
