export { ConfigError } from "./config-error.ts";
export { type DatabaseTarget, isLoopbackOrSocket, type PostgresTarget, parseDatabaseUrl, type SqliteTarget } from "./database-url.ts";
export { type Config, type ConfigIo, type ConfigScope, DEFAULTS, describeConfig, evaluationSettingsOf, KNOWN_VARIABLES, loadConfig, type LogLevel } from "./load-config.ts";
