// Structured logs (pino). Secrets never reach a log line: known secret fields are redacted.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(level: string, name = "switchboard"): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: [
        "*.apiKey", "*.api_key", "*.secret", "*.signingSecret", "*.botToken", "*.token", "*.password",
        "req.headers.authorization", "headers.authorization", "*.headers.authorization",
        'req.headers["x-slack-signature"]', 'req.headers["x-hub-signature-256"]',
      ],
      censor: "[redacted]",
    },
  });
}
