import pino, { type DestinationStream, type Logger } from "pino";
import type { LogLevel } from "../config/index.ts";

export type { Logger } from "pino";

/**
 * JSON logs to stdout with no transport (transports break in compiled binaries: RECIPES 3). Redaction is a second line of
 * defence: secrets are never put in log objects or messages on purpose; these paths catch the fields that could carry one.
 * pino's `*` matches exactly one level, so each depth is listed.
 */
export const REDACTED_PATHS = [
  "token", "*.token", "*.*.token",
  "privateKey", "*.privateKey", "*.*.privateKey",
  "password", "*.password", "*.*.password",
  "secret", "*.secret", "*.*.secret",
  "webhookSecret", "*.webhookSecret",
  "stateSecret", "*.stateSecret", "*.*.stateSecret",
  "authorization", "*.authorization", "*.*.authorization",
  "headers.authorization", "*.headers.authorization",
  'headers["x-hub-signature-256"]', '*.headers["x-hub-signature-256"]',
  "cookie", "*.cookie", "*.headers.cookie",
  "databaseUrl", "*.databaseUrl",
];

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "codeowner-approval" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: "[REDACTED]" },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
