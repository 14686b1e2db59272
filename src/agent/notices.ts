// User-facing texts of the turn lifecycle, in one place.

export const WAITING_NOTICE = "Another worker is running a turn on this session; waiting…";
export const SESSION_FREE_NOTICE = "Session is free; loading the latest transcript…";
export const LEASE_TIMEOUT_LIFECYCLE = "Gave up waiting for the other turn on this session.";
export const LEASE_TIMEOUT_NOTICE =
  "Another turn on this conversation took too long, so your message was not processed. Please send it again.";
export const LEASE_ERROR_NOTICE =
  "The conversation store is unavailable right now, so your message was not processed. Please send it again.";
export const WAIT_INTERRUPTED_NOTICE =
  "Interrupted while waiting for the previous turn; your message was kept and goes with the next one.";
export const WAIT_CANCELLED_NOTICE = "Cancelled while waiting for the previous turn.";
export const LEASE_LOST_NOTICE =
  "This turn lost its hold on the conversation (another worker took over), so it stopped.";
export const LEASE_LOST_INTERRUPT = "The session turn lease was lost; stopping this turn.";
export const PROVIDER_FAILURE_NOTICE =
  "Sorry, the model server could not answer this message. Please try again in a moment.";
export const MAX_STEPS_NOTICE = "I stopped after too many tool steps without reaching an answer.";
export const TURN_FAILURE_NOTICE = "Sorry, something went wrong while answering this message.";
export const PERSISTENCE_FAILURE_NOTICE = "The reply could not be saved; please send your message again.";
export const COMPACTED_NOTICE = "Summarised older messages to keep the conversation within limits.";
