import { DEFAULT_DECISION_RETENTION_DAYS, MAX_DECISION_RETENTION_DAYS, MIN_DECISION_RETENTION_DAYS } from "../records/schema.ts";
import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import type { EvaluationSettings } from "../evaluation/evidence.ts";
import { MAX_WEBHOOK_BODY_BYTES } from "../ingress/limits.ts";
import { DEFAULT_FORGE_DIRECTORY, defaultPolicyPath, forgeDirectoryProblem } from "../policy/forge-directory.ts";
import { AttestationKeyError, loadSigningKey, loadVerificationKeys, type SigningKey, type VerificationKey } from "../records/attestation.ts";
import { ConfigError } from "./config-error.ts";
import { type DecisionsToken, parseDecisionsTokens } from "./decision-tokens.ts";
import { type DatabaseTarget, parseDatabaseUrl } from "./database-url.ts";

/**
 * Every SERVICE_* setting (spec "Settings", DESIGN 3.4 and 3.6), parsed once into a frozen object. Nothing else in the
 * service reads process.env. Secrets come from files (private key, webhook secret, optionally the database URL and the
 * setup-state secret) or the secret database URL variable; errors name the variable and the rule, never a value.
 */

export type Environment = string;

export type Config = {
  readonly environment: Environment;
  readonly production: boolean;
  readonly host: string;
  readonly port: number;
  readonly logLevel: LogLevel;
  readonly database: DatabaseTarget;
  readonly forge: {
    readonly apiUrl: string;
    readonly webUrl: string;
    readonly appId: number | null;
    /** PEM text of the App private key, or null when no key file is configured. */
    readonly privateKey: string | null;
    readonly identityProbeIntervalSeconds: number;
    readonly identityFreshnessSeconds: number;
    /** The request governor's budgets per installation (server/forge/governor.ts). */
    readonly requestBudget: {
      readonly pointsPerMinute: number;
      readonly writesPerMinute: number;
      readonly concurrentRequests: number;
      readonly rateLimitReserve: number;
    };
  };
  /** Webhook secret bytes (UTF-8), or null: the webhook route then answers 503. */
  readonly webhookSecret: Uint8Array | null;
  readonly checkName: string;
  /** The forge's configuration directory in a repository (`.forge`; `.github` on GitHub): a single segment starting with `.`. */
  readonly forgeDirectory: string;
  readonly policyPath: string;
  readonly organizationPolicyRepository: string;
  readonly workerEnabled: boolean;
  readonly reconcileEnabled: boolean;
  readonly workerRetryMaxSeconds: number;
  /** How long a claimed row stays leased without renewal; another worker may take it over after that (a crash). */
  readonly workerLeaseSeconds: number;
  readonly webhookDeliveryRetentionDays: number;
  /** How long decision and merge records are kept (DESIGN 3.10); the reconciler prunes older ones. */
  readonly decisionRetentionDays: number;
  readonly webhookInvalidationTimeoutSeconds: number;
  /** Process-wide bound on webhook body bytes held before their signature is verified; past it deliveries get 503. */
  readonly webhookUnverifiedBodyBudgetBytes: number;
  readonly reconcileIntervalSeconds: number;
  /** The rolling full sweep's period: every open pull request is evaluated again at least this often (spread evenly). */
  readonly reconcileFullSweepHours: number;
  readonly allowInsecureChanges: boolean;
  readonly playgroundEnabled: boolean;
  /** Named bearer tokens that may read every decision record (only their SHA-256 digests are kept). */
  readonly decisionsTokens: readonly DecisionsToken[];
  /**
   * Signing in with the forge (the App's OAuth web flow) to read the decision records of the repositories the forge lets a
   * person read; null when the App's client ID and secret are not configured.
   */
  readonly signIn: { readonly clientId: string; readonly clientSecret: string } | null;
  /**
   * Signed attestations (server/records/attestation.ts): the key that signs checkpoints and approved merges, and every key
   * whose signatures are still accepted (the signing key's and, after a rotation, older ones); null: nothing is signed.
   */
  readonly attestation: { readonly signer: SigningKey; readonly verifiers: readonly VerificationKey[] } | null;
  readonly setup:
    | { readonly enabled: false }
    | {
      readonly enabled: true;
      /** Where the forge reaches the service: the App's homepage and webhook URL. */
      readonly publicUrl: string;
      /** Where the administrator's browser opens /setup and the forge sends it back (the App's callback URL). */
      readonly setupUrl: string;
      readonly stateSecret: Uint8Array;
    };
};

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export type ConfigIo = { readonly readFile: (path: string) => string };

export const DEFAULTS = Object.freeze({
  environment: "development",
  host: "0.0.0.0",
  port: 8080,
  logLevel: "info" as LogLevel,
  sqliteUrl: "sqlite:./service.db",
  forgeApiUrl: "https://api.github.com",
  forgeWebUrl: "https://github.com",
  checkName: "Service / approval",
  // SERVICE_POLICY_PATH and SERVICE_ORGANIZATION_POLICY_REPOSITORY default to `<forgeDirectory>/service-policy.toml` and
  // `<forgeDirectory>`; these are their values under the default directory.
  forgeDirectory: DEFAULT_FORGE_DIRECTORY,
  policyPath: defaultPolicyPath(DEFAULT_FORGE_DIRECTORY),
  organizationPolicyRepository: DEFAULT_FORGE_DIRECTORY,
  identityProbeIntervalSeconds: 30,
  identityFreshnessSeconds: 90,
  // Below the forge's documented secondary limits (about 900 points a minute, 100 concurrent requests; issue 18).
  forgePointsPerMinute: 600,
  forgeWritesPerMinute: 60,
  forgeConcurrentRequests: 20,
  forgeRateLimitReserve: 250,
  workerRetryMaxSeconds: 300,
  workerLeaseSeconds: 30,
  webhookDeliveryRetentionDays: 14,
  decisionRetentionDays: DEFAULT_DECISION_RETENTION_DAYS,
  webhookInvalidationTimeoutSeconds: 5,
  webhookUnverifiedBodyBudgetBytes: 64 * 1024 * 1024,
  reconcileIntervalSeconds: 300,
  reconcileFullSweepHours: 24,
});

/** Every variable loadConfig knows; any other SERVICE_* name is rejected so that a typo cannot silently fall back to a default. */
export const KNOWN_VARIABLES = Object.freeze([
  "SERVICE_ENVIRONMENT",
  "SERVICE_HOST",
  "SERVICE_PORT",
  "SERVICE_LOG_LEVEL",
  "SERVICE_DATABASE_URL",
  "SERVICE_DATABASE_URL_FILE",
  "SERVICE_FORGE_API_URL",
  "SERVICE_FORGE_WEB_URL",
  "SERVICE_FORGE_APP_ID",
  "SERVICE_FORGE_PRIVATE_KEY_FILE",
  "SERVICE_FORGE_WEBHOOK_SECRET_FILE",
  "SERVICE_DECISIONS_TOKEN_FILE",
  "SERVICE_FORGE_CLIENT_ID",
  "SERVICE_FORGE_CLIENT_SECRET_FILE",
  "SERVICE_ATTESTATION_KEY_FILE",
  "SERVICE_ATTESTATION_PUBLIC_KEYS_FILE",
  "SERVICE_FORGE_IDENTITY_PROBE_INTERVAL_SECONDS",
  "SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS",
  "SERVICE_FORGE_POINTS_PER_MINUTE",
  "SERVICE_FORGE_WRITES_PER_MINUTE",
  "SERVICE_FORGE_CONCURRENT_REQUESTS",
  "SERVICE_FORGE_RATE_LIMIT_RESERVE",
  "SERVICE_CHECK_NAME",
  "SERVICE_FORGE_DIRECTORY",
  "SERVICE_POLICY_PATH",
  "SERVICE_ORGANIZATION_POLICY_REPOSITORY",
  "SERVICE_WORKER_ENABLED",
  "SERVICE_RECONCILE_ENABLED",
  "SERVICE_WORKER_RETRY_MAX_SECONDS",
  "SERVICE_WORKER_LEASE_SECONDS",
  "SERVICE_WEBHOOK_DELIVERY_RETENTION_DAYS",
  "SERVICE_DECISION_RETENTION_DAYS",
  "SERVICE_WEBHOOK_INVALIDATION_TIMEOUT_SECONDS",
  "SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES",
  "SERVICE_RECONCILE_INTERVAL_SECONDS",
  "SERVICE_RECONCILE_FULL_SWEEP_HOURS",
  "SERVICE_ALLOW_INSECURE_CHANGES",
  "SERVICE_PLAYGROUND_ENABLED",
  "SERVICE_SETUP_ENABLED",
  "SERVICE_PUBLIC_URL",
  "SERVICE_SETUP_URL",
  "SERVICE_SETUP_STATE_SECRET",
  "SERVICE_SETUP_STATE_SECRET_FILE",
]);

const MIN_SECRET_BYTES = 32;
const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];
const defaultIo: ConfigIo = { readFile: (path) => readFileSync(path, "utf8") };

/**
 * scope "database" (for `database migrate` and `database check`): the forge credentials are not required even in production,
 * so a migration job needs only the database secret; everything present is still validated and every other rule applies.
 */
export type ConfigScope = "service" | "database";

export function loadConfig(env: Readonly<Record<string, string | undefined>>, io: ConfigIo = defaultIo, scope: ConfigScope = "service"): Config {
  const known = new Set<string>(KNOWN_VARIABLES);
  for (const name of Object.keys(env).sort()) {
    if (name.startsWith("SERVICE_") && !known.has(name)) {
      throw new ConfigError(name, "is not a known setting (check the spelling; see docs/operations.md, Settings)");
    }
  }
  const get = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value === "" ? undefined : value;
  };

  const environment = get("SERVICE_ENVIRONMENT") ?? DEFAULTS.environment;
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(environment)) {
    throw new ConfigError("SERVICE_ENVIRONMENT", "must be a lowercase name such as production or development");
  }
  const production = environment === "production";
  const requireForge = production && scope === "service";

  if (production) {
    // postgres.js (and libpq tools) read PG* variables as silent defaults: any of them, even empty, is an ambient override.
    const ambient = Object.keys(env).filter((name) => name.startsWith("PG")).sort();
    if (ambient.length > 0) {
      throw new ConfigError(ambient[0]!, "ambient database-client variables (PG*) are not allowed in production; unset them and put everything in SERVICE_DATABASE_URL");
    }
  }

  const readSecretFile = (variable: string): string | undefined => {
    const path = get(variable);
    if (path === undefined) return undefined;
    if (!isAbsolute(path) && production) throw new ConfigError(variable, "must be an absolute file path");
    try {
      return io.readFile(path);
    } catch {
      throw new ConfigError(variable, "file cannot be read (check the path and that the process may read it)");
    }
  };

  // Database URL: the variable or its file form, not both.
  const urlText = get("SERVICE_DATABASE_URL");
  const urlFile = get("SERVICE_DATABASE_URL_FILE");
  if (urlText !== undefined && urlFile !== undefined) {
    throw new ConfigError("SERVICE_DATABASE_URL_FILE", "set either SERVICE_DATABASE_URL or SERVICE_DATABASE_URL_FILE, not both");
  }
  let database: DatabaseTarget;
  if (urlFile !== undefined) {
    database = parseDatabaseUrl(stripFinalNewline(readSecretFile("SERVICE_DATABASE_URL_FILE") ?? ""), production, "SERVICE_DATABASE_URL_FILE");
  } else if (urlText !== undefined) {
    database = parseDatabaseUrl(urlText, production);
  } else if (production) {
    throw new ConfigError("SERVICE_DATABASE_URL", "is required in production (a postgresql:// URL, or SERVICE_DATABASE_URL_FILE)");
  } else {
    database = parseDatabaseUrl(DEFAULTS.sqliteUrl, false);
  }
  if (database.backend === "postgresql" && database.tls?.caFile) {
    try {
      io.readFile(database.tls.caFile);
    } catch {
      throw new ConfigError("SERVICE_DATABASE_URL", "sslrootcert file cannot be read");
    }
  }

  const forgeApiUrl = parseOrigin("SERVICE_FORGE_API_URL", get("SERVICE_FORGE_API_URL") ?? DEFAULTS.forgeApiUrl, production);
  const forgeWebUrl = parseOrigin("SERVICE_FORGE_WEB_URL", get("SERVICE_FORGE_WEB_URL") ?? DEFAULTS.forgeWebUrl, production);

  const appIdText = get("SERVICE_FORGE_APP_ID");
  let appId: number | null = null;
  if (appIdText !== undefined) {
    if (!/^[1-9]\d{0,15}$/.test(appIdText) || !Number.isSafeInteger(Number(appIdText))) {
      throw new ConfigError("SERVICE_FORGE_APP_ID", "must be a positive integer (the App's numeric ID)");
    }
    appId = Number(appIdText);
  } else if (requireForge) {
    throw new ConfigError("SERVICE_FORGE_APP_ID", "is required in production");
  }

  const privateKeyText = readSecretFile("SERVICE_FORGE_PRIVATE_KEY_FILE");
  let privateKey: string | null = null;
  if (privateKeyText !== undefined) {
    try {
      const key = createPrivateKey(privateKeyText);
      if (key.asymmetricKeyType !== "rsa") throw new Error("not rsa");
    } catch {
      throw new ConfigError("SERVICE_FORGE_PRIVATE_KEY_FILE", "file must hold the App's RSA private key in PEM form");
    }
    privateKey = privateKeyText;
  } else if (requireForge) {
    throw new ConfigError("SERVICE_FORGE_PRIVATE_KEY_FILE", "is required in production");
  }
  if ((appId === null) !== (privateKey === null)) {
    const missing = appId === null ? "SERVICE_FORGE_APP_ID" : "SERVICE_FORGE_PRIVATE_KEY_FILE";
    throw new ConfigError(missing, "App ID and private key file must be set together");
  }

  const webhookSecretText = readSecretFile("SERVICE_FORGE_WEBHOOK_SECRET_FILE");
  let webhookSecret: Uint8Array | null = null;
  if (webhookSecretText !== undefined) {
    webhookSecret = new TextEncoder().encode(stripFinalNewline(webhookSecretText));
    if (webhookSecret.byteLength < MIN_SECRET_BYTES) {
      throw new ConfigError("SERVICE_FORGE_WEBHOOK_SECRET_FILE", `secret must be at least ${MIN_SECRET_BYTES} UTF-8 bytes`);
    }
  } else if (requireForge) {
    throw new ConfigError("SERVICE_FORGE_WEBHOOK_SECRET_FILE", "is required in production");
  }

  const identityProbeIntervalSeconds = integer(env, "SERVICE_FORGE_IDENTITY_PROBE_INTERVAL_SECONDS", DEFAULTS.identityProbeIntervalSeconds, 5, 300);
  const identityFreshnessSeconds = integer(env, "SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS", DEFAULTS.identityFreshnessSeconds, 10, 3600);
  if (identityFreshnessSeconds < 2 * identityProbeIntervalSeconds) {
    throw new ConfigError("SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS", "must be at least twice SERVICE_FORGE_IDENTITY_PROBE_INTERVAL_SECONDS");
  }

  // Lower bounds leave room for one write (5 points) and one request; upper bounds let a forge with other limits (or the
  // simulator, which has no secondary limits) be driven harder, while a slip of digits cannot lift the bound entirely.
  const requestBudget = {
    pointsPerMinute: integer(env, "SERVICE_FORGE_POINTS_PER_MINUTE", DEFAULTS.forgePointsPerMinute, 10, 1_000_000),
    writesPerMinute: integer(env, "SERVICE_FORGE_WRITES_PER_MINUTE", DEFAULTS.forgeWritesPerMinute, 1, 100_000),
    concurrentRequests: integer(env, "SERVICE_FORGE_CONCURRENT_REQUESTS", DEFAULTS.forgeConcurrentRequests, 1, 100),
    rateLimitReserve: integer(env, "SERVICE_FORGE_RATE_LIMIT_RESERVE", DEFAULTS.forgeRateLimitReserve, 0, 15_000),
  };

  const checkName = get("SERVICE_CHECK_NAME") ?? DEFAULTS.checkName;
  if (checkName.trim() !== checkName || checkName.length > 100 || /[\p{Cc}\p{Cf}]/u.test(checkName)) {
    throw new ConfigError("SERVICE_CHECK_NAME", "must be 1 to 100 printable characters without surrounding spaces");
  }
  // Read raw, not through get(): set but empty is an error here, not "unset" as elsewhere. Whoever sets it means a directory,
  // and falling back to .forge on a GitHub deployment would silently read no .github/CODEOWNERS and protect no workflows.
  const forgeDirectory = env.SERVICE_FORGE_DIRECTORY ?? DEFAULTS.forgeDirectory;
  const forgeDirectoryError = forgeDirectoryProblem(forgeDirectory);
  if (forgeDirectoryError !== null) throw new ConfigError("SERVICE_FORGE_DIRECTORY", `${forgeDirectoryError} (a single directory name such as .forge or .github)`);
  const policyPath = get("SERVICE_POLICY_PATH") ?? defaultPolicyPath(forgeDirectory);
  if (!isRepositoryPath(policyPath)) {
    throw new ConfigError("SERVICE_POLICY_PATH", "must be a relative file path inside the repository (no leading /, no . or .. segments)");
  }
  const organizationPolicyRepository = get("SERVICE_ORGANIZATION_POLICY_REPOSITORY") ?? forgeDirectory;
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(organizationPolicyRepository) || organizationPolicyRepository === "." || organizationPolicyRepository === "..") {
    throw new ConfigError("SERVICE_ORGANIZATION_POLICY_REPOSITORY", "must be a repository name (letters, digits, '.', '-', '_'; at most 100)");
  }

  const reconcileIntervalSeconds = integer(env, "SERVICE_RECONCILE_INTERVAL_SECONDS", DEFAULTS.reconcileIntervalSeconds, 10, 86_400);
  // One week at most: the sweep is what recovers membership, team and permission changes whose events were missed.
  const reconcileFullSweepHours = integer(env, "SERVICE_RECONCILE_FULL_SWEEP_HOURS", DEFAULTS.reconcileFullSweepHours, 1, 168);
  if (reconcileFullSweepHours * 3600 < reconcileIntervalSeconds) {
    throw new ConfigError("SERVICE_RECONCILE_FULL_SWEEP_HOURS", "must cover at least one SERVICE_RECONCILE_INTERVAL_SECONDS (the sweep is spread over the scans of its period)");
  }

  const host = get("SERVICE_HOST") ?? DEFAULTS.host;
  if (!/^[A-Za-z0-9.:-]+$/.test(host)) throw new ConfigError("SERVICE_HOST", "must be a host name or IP address to listen on");
  const port = integer(env, "SERVICE_PORT", DEFAULTS.port, production ? 1 : 0, 65535);
  const logLevel = (get("SERVICE_LOG_LEVEL") ?? DEFAULTS.logLevel) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError("SERVICE_LOG_LEVEL", `must be one of ${LOG_LEVELS.join(", ")}`);

  const setupEnabled = boolean(env, "SERVICE_SETUP_ENABLED", false);
  let setup: Config["setup"] = { enabled: false };
  if (setupEnabled) {
    const publicUrlText = get("SERVICE_PUBLIC_URL");
    if (publicUrlText === undefined) throw new ConfigError("SERVICE_PUBLIC_URL", "is required when SERVICE_SETUP_ENABLED=true");
    const publicUrl = parseSetupOrigin("SERVICE_PUBLIC_URL", publicUrlText);
    const setupUrlText = get("SERVICE_SETUP_URL");
    const setupUrl = setupUrlText === undefined ? publicUrl : parseSetupOrigin("SERVICE_SETUP_URL", setupUrlText);
    const stateText = get("SERVICE_SETUP_STATE_SECRET");
    const stateFileText = readSecretFile("SERVICE_SETUP_STATE_SECRET_FILE");
    if (stateText !== undefined && stateFileText !== undefined) {
      throw new ConfigError("SERVICE_SETUP_STATE_SECRET_FILE", "set either SERVICE_SETUP_STATE_SECRET or its _FILE form, not both");
    }
    const stateSource = stateFileText !== undefined ? stripFinalNewline(stateFileText) : stateText;
    const stateVariable = stateFileText !== undefined ? "SERVICE_SETUP_STATE_SECRET_FILE" : "SERVICE_SETUP_STATE_SECRET";
    if (stateSource === undefined) throw new ConfigError("SERVICE_SETUP_STATE_SECRET", "is required when SERVICE_SETUP_ENABLED=true");
    const stateSecret = new TextEncoder().encode(stateSource);
    if (stateSecret.byteLength < MIN_SECRET_BYTES) throw new ConfigError(stateVariable, `secret must be at least ${MIN_SECRET_BYTES} bytes`);
    if (webhookSecret !== null && equalBytes(stateSecret, webhookSecret)) {
      throw new ConfigError(stateVariable, "must differ from the webhook secret");
    }
    setup = { enabled: true, publicUrl, setupUrl, stateSecret };
  }
  // Disabled: the public URL and the state secret are optional and not read (spec "Setup routes"); nothing uses them.

  // Named bearer tokens for the decision routes; absent: no token reader (the routes need another credential or answer 404).
  const decisionsTokenText = readSecretFile("SERVICE_DECISIONS_TOKEN_FILE");
  const decisionsTokens: readonly DecisionsToken[] = decisionsTokenText === undefined ? [] : parseDecisionsTokens(decisionsTokenText);

  // Signing in with the forge: the App's OAuth client ID and secret (setup shows both), both or neither.
  const clientId = get("SERVICE_FORGE_CLIENT_ID");
  const clientSecretText = readSecretFile("SERVICE_FORGE_CLIENT_SECRET_FILE");
  let signIn: Config["signIn"] = null;
  if (clientId !== undefined || clientSecretText !== undefined) {
    if (clientId === undefined) throw new ConfigError("SERVICE_FORGE_CLIENT_ID", "is required with SERVICE_FORGE_CLIENT_SECRET_FILE");
    if (clientSecretText === undefined) throw new ConfigError("SERVICE_FORGE_CLIENT_SECRET_FILE", "is required with SERVICE_FORGE_CLIENT_ID");
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(clientId)) throw new ConfigError("SERVICE_FORGE_CLIENT_ID", "must be the App's client ID (letters, digits, '.', '-', '_')");
    const clientSecret = stripFinalNewline(clientSecretText);
    if (clientSecret.length < 20 || /\s/.test(clientSecret)) throw new ConfigError("SERVICE_FORGE_CLIENT_SECRET_FILE", "must hold the App's client secret (at least 20 characters, no spaces)");
    signIn = { clientId, clientSecret };
  }

  // Signed attestations: a private key (Ed25519 or ECDSA P-256), and optionally older public keys still accepted.
  const attestationKeyText = readSecretFile("SERVICE_ATTESTATION_KEY_FILE");
  const olderKeysText = readSecretFile("SERVICE_ATTESTATION_PUBLIC_KEYS_FILE");
  let attestation: Config["attestation"] = null;
  if (olderKeysText !== undefined && attestationKeyText === undefined) throw new ConfigError("SERVICE_ATTESTATION_PUBLIC_KEYS_FILE", "needs SERVICE_ATTESTATION_KEY_FILE (the key that signs now)");
  if (attestationKeyText !== undefined) {
    try {
      const signer = loadSigningKey(attestationKeyText);
      const older = olderKeysText === undefined ? [] : loadVerificationKeys(olderKeysText).filter((key) => key.keyId !== signer.keyId);
      attestation = { signer, verifiers: [signer, ...older] };
    } catch (error) {
      if (error instanceof AttestationKeyError) throw new ConfigError(error.setting, error.problem);
      throw error;
    }
  }

  return deepFreeze({
    environment,
    production,
    host,
    port,
    logLevel,
    database,
    forge: { apiUrl: forgeApiUrl, webUrl: forgeWebUrl, appId, privateKey, identityProbeIntervalSeconds, identityFreshnessSeconds, requestBudget },
    webhookSecret,
    checkName,
    forgeDirectory,
    policyPath,
    organizationPolicyRepository,
    workerEnabled: boolean(env, "SERVICE_WORKER_ENABLED", true),
    reconcileEnabled: boolean(env, "SERVICE_RECONCILE_ENABLED", true),
    workerRetryMaxSeconds: integer(env, "SERVICE_WORKER_RETRY_MAX_SECONDS", DEFAULTS.workerRetryMaxSeconds, 1, 86_400),
    workerLeaseSeconds: integer(env, "SERVICE_WORKER_LEASE_SECONDS", DEFAULTS.workerLeaseSeconds, 3, 600),
    webhookDeliveryRetentionDays: integer(env, "SERVICE_WEBHOOK_DELIVERY_RETENTION_DAYS", DEFAULTS.webhookDeliveryRetentionDays, 1, 365),
    decisionRetentionDays: integer(env, "SERVICE_DECISION_RETENTION_DAYS", DEFAULTS.decisionRetentionDays, MIN_DECISION_RETENTION_DAYS, MAX_DECISION_RETENTION_DAYS),
    webhookInvalidationTimeoutSeconds: integer(env, "SERVICE_WEBHOOK_INVALIDATION_TIMEOUT_SECONDS", DEFAULTS.webhookInvalidationTimeoutSeconds, 1, 9),
    // At least one maximal body, so a lone delivery always fits; at most 512 MiB, so a slip of digits cannot lift the bound.
    webhookUnverifiedBodyBudgetBytes: integer(env, "SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES", DEFAULTS.webhookUnverifiedBodyBudgetBytes, MAX_WEBHOOK_BODY_BYTES, 512 * 1024 * 1024),
    reconcileIntervalSeconds,
    reconcileFullSweepHours,
    allowInsecureChanges: boolean(env, "SERVICE_ALLOW_INSECURE_CHANGES", false),
    playgroundEnabled: boolean(env, "SERVICE_PLAYGROUND_ENABLED", true),
    setup,
    decisionsTokens,
    signIn,
    attestation,
  });
}

/** The settings the decision core evaluates under, as the worker, `service explain` and `service history replay` pass them. */
export function evaluationSettingsOf(config: Config): EvaluationSettings {
  return { checkName: config.checkName, policyPath: config.policyPath, forgeDirectory: config.forgeDirectory, allowInsecureChanges: config.allowInsecureChanges };
}

/** The effective settings with every secret left out, for `config check` and startup logs. */
export function describeConfig(config: Config): Record<string, unknown> {
  const db = config.database;
  return {
    environment: config.environment,
    listen: `${config.host}:${config.port}`,
    log_level: config.logLevel,
    database_backend: db.backend,
    database:
      db.backend === "sqlite"
        ? { path: db.path }
        : { host: db.host, hostaddr: db.hostaddr, port: db.port, database: db.database, user: db.user, tls: db.tls ? "verify-full" : "off" },
    forge_api_url: config.forge.apiUrl,
    forge_web_url: config.forge.webUrl,
    forge_app_id: config.forge.appId,
    forge_private_key: config.forge.privateKey === null ? "not configured" : "loaded",
    webhook_secret: config.webhookSecret === null ? "not configured" : "loaded",
    identity_probe_interval_seconds: config.forge.identityProbeIntervalSeconds,
    identity_freshness_seconds: config.forge.identityFreshnessSeconds,
    forge_points_per_minute: config.forge.requestBudget.pointsPerMinute,
    forge_writes_per_minute: config.forge.requestBudget.writesPerMinute,
    forge_concurrent_requests: config.forge.requestBudget.concurrentRequests,
    forge_rate_limit_reserve: config.forge.requestBudget.rateLimitReserve,
    check_name: config.checkName,
    forge_directory: config.forgeDirectory,
    policy_path: config.policyPath,
    organization_policy_repository: config.organizationPolicyRepository,
    worker_enabled: config.workerEnabled,
    reconcile_enabled: config.reconcileEnabled,
    worker_retry_max_seconds: config.workerRetryMaxSeconds,
    worker_lease_seconds: config.workerLeaseSeconds,
    webhook_delivery_retention_days: config.webhookDeliveryRetentionDays,
    decision_retention_days: config.decisionRetentionDays,
    webhook_invalidation_timeout_seconds: config.webhookInvalidationTimeoutSeconds,
    webhook_unverified_body_budget_bytes: config.webhookUnverifiedBodyBudgetBytes,
    reconcile_interval_seconds: config.reconcileIntervalSeconds,
    reconcile_full_sweep_hours: config.reconcileFullSweepHours,
    allow_insecure_changes: config.allowInsecureChanges,
    playground_enabled: config.playgroundEnabled,
    setup_enabled: config.setup.enabled,
    public_url: config.setup.enabled ? config.setup.publicUrl : null,
    setup_url: config.setup.enabled ? config.setup.setupUrl : null,
  };
}

function parseOrigin(variable: string, text: string, requireHttps: boolean): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(variable, "must be an absolute URL such as https://host");
  }
  if (url.protocol !== "https:" && (requireHttps || url.protocol !== "http:")) {
    throw new ConfigError(variable, requireHttps ? "must use https://" : "must use https:// (or http:// outside production)");
  }
  if (url.username !== "" || url.password !== "") throw new ConfigError(variable, "must not contain user information");
  if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "" || /[?#]/.test(text)) {
    throw new ConfigError(variable, "must be an origin only (no path, query or fragment)");
  }
  return url.origin;
}

/**
 * A setup origin: HTTPS, or plain HTTP on a loopback address (127.0.0.0/8, ::1, localhost), which never leaves the machine it
 * is typed on: a trial on one machine, or a `kubectl port-forward` to a pod. A browser treats such an origin as secure, so the
 * setup's `__Host-` cookie still works there.
 */
function parseSetupOrigin(variable: string, text: string): string {
  const url = URL.canParse(text) ? new URL(text) : null;
  const plainHttp = url?.protocol === "http:";
  if (plainHttp && !isLoopbackHost(url!.hostname)) {
    throw new ConfigError(variable, "must use https:// (plain http:// only on a loopback address: 127.0.0.1, [::1] or localhost)");
  }
  return parseOrigin(variable, text, !plainHttp);
}

/** `hostname` as the URL parser normalises it (lower case, IPv4 in dotted decimal, IPv6 in brackets). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(hostname);
}

function boolean(env: Readonly<Record<string, string | undefined>>, name: string, fallback: boolean): boolean {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  if (value === "true") return true;
  if (value === "false") return false;
  throw new ConfigError(name, "must be true or false");
}

function integer(env: Readonly<Record<string, string | undefined>>, name: string, fallback: number, min: number, max: number): number {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  if (!/^\d{1,9}$/.test(value)) throw new ConfigError(name, `must be an integer from ${min} to ${max}`);
  const number = Number(value);
  if (number < min || number > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}`);
  return number;
}

function isRepositoryPath(path: string): boolean {
  if (path === "" || path.length > 255 || path.startsWith("/") || path.endsWith("/") || /[\p{Cc}\\]/u.test(path)) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

function stripFinalNewline(text: string): string {
  return text.replace(/\r?\n$/, "");
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, index) => byte === b[index]);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !(value instanceof Uint8Array)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
