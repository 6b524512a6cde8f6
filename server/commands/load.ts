import { type Config, ConfigError, type ConfigScope, loadConfig } from "../config/index.ts";
import { createLogger, type Logger } from "../observability/logger.ts";

/** Loads the configuration or prints the rule that failed (never a value) and returns null. */
export function loadOrReport(env: Record<string, string | undefined>, stderr: (line: string) => void, scope: ConfigScope = "service"): Config | null {
  try {
    return loadConfig(env, undefined, scope);
  } catch (error) {
    if (error instanceof ConfigError) {
      stderr(`configuration error: ${error.message}`);
      return null;
    }
    throw error;
  }
}

export function loggerFor(config: Config): Logger {
  return createLogger(config.logLevel);
}
