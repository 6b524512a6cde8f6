/**
 * A configuration rejection. The message names the variable and the rule it broke and never carries the
 * rejected value: several settings are secrets (database URL, key and secret files' contents).
 */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(
    readonly variable: string,
    readonly rule: string,
  ) {
    super(`${variable}: ${rule}`);
  }
}
