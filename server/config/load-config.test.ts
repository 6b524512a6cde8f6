import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { ConfigError, describeConfig, loadConfig } from "./index.ts";

const KEY = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const SECRET = "s3cret-webhook-value-that-is-long-enough!";
const FILES: Record<string, string> = {
  "/run/secrets/key.pem": KEY,
  "/run/secrets/webhook": `${SECRET}\n`,
  "/run/secrets/short": "too-short",
  "/run/secrets/ca.pem": "-----BEGIN CERTIFICATE-----\n",
  "/run/secrets/db-url": "postgresql://svc:pw@db.internal:5432/service?sslmode=verify-full&sslrootcert=/run/secrets/ca.pem\n",
  "/run/secrets/not-a-key": "hello",
  "/run/secrets/decisions-tokens": `auditor:${"t".repeat(40)}\n`,
  "/run/secrets/attestation-ed25519": generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  "/run/secrets/attestation-p384": generateKeyPairSync("ec", { namedCurve: "secp384r1" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  "/run/secrets/attestation-encrypted": generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "pw" }).toString(),
  "/run/secrets/attestation-truncated": generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString().replace(/\n[^-]+\n/, "\nAAAA\n"),
  "/run/secrets/decisions-dup": `auditor:${"t".repeat(40)}\nauditor:${"u".repeat(40)}\n`,
};
const io = {
  readFile(path: string) {
    const text = FILES[path];
    if (text === undefined) throw new Error(`ENOENT ${path}`);
    return text;
  },
};
const PROD = {
  SERVICE_ENVIRONMENT: "production",
  SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal:5432/service?sslmode=verify-full&sslrootcert=/run/secrets/ca.pem",
  SERVICE_FORGE_APP_ID: "1234",
  SERVICE_FORGE_PRIVATE_KEY_FILE: "/run/secrets/key.pem",
  SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/webhook",
};

function rejection(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env, io);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("configuration was accepted");
}

describe("defaults outside production", () => {
  test("an empty environment loads with the embedded database and documented defaults", () => {
    const config = loadConfig({}, io);
    expect(config.environment).toBe("development");
    expect(config.production).toBe(false);
    expect(config.database).toEqual({ backend: "sqlite", path: "./service.db" });
    expect(config.forge.apiUrl).toBe("https://api.github.com");
    expect(config.forge.webUrl).toBe("https://github.com");
    expect(config.forge.appId).toBeNull();
    expect(config.checkName).toBe("Service / approval");
    expect(config.forgeDirectory).toBe(".forge");
    expect(config.policyPath).toBe(".forge/service-policy.toml");
    expect(config.organizationPolicyRepository).toBe(".forge");
    expect(config.host).toBe("0.0.0.0");
    expect(config.port).toBe(8080);
    expect(config.workerEnabled).toBe(true);
    expect(config.reconcileEnabled).toBe(true);
    expect(config.workerRetryMaxSeconds).toBe(300);
    expect(config.workerLeaseSeconds).toBe(30);
    expect(config.webhookDeliveryRetentionDays).toBe(14);
    expect(config.decisionRetentionDays).toBe(400);
    expect(config.webhookInvalidationTimeoutSeconds).toBe(5);
    expect(config.webhookUnverifiedBodyBudgetBytes).toBe(64 * 1024 * 1024);
    expect(config.reconcileIntervalSeconds).toBe(300);
    expect(config.forge.identityProbeIntervalSeconds).toBe(30);
    expect(config.forge.identityFreshnessSeconds).toBe(90);
    expect(config.forge.requestBudget).toEqual({ pointsPerMinute: 600, writesPerMinute: 60, concurrentRequests: 20, rateLimitReserve: 250 });
    expect(config.allowInsecureChanges).toBe(false);
    expect(config.setup.enabled).toBe(false);
    expect(config.playgroundEnabled).toBe(true);
  });

  test("the configuration object is frozen", () => {
    const config = loadConfig({}, io);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.forge)).toBe(true);
    expect(Object.isFrozen(config.database)).toBe(true);
  });

  test("an http forge API origin is accepted outside production (the simulator)", () => {
    expect(loadConfig({ SERVICE_FORGE_API_URL: "http://127.0.0.1:9999" }, io).forge.apiUrl).toBe("http://127.0.0.1:9999");
  });

  test("a valid production configuration loads, with secrets read from files", () => {
    const config = loadConfig(PROD, io);
    expect(config.production).toBe(true);
    expect(config.forge.appId).toBe(1234);
    expect(config.forge.privateKey).toBe(KEY);
    expect(new TextDecoder().decode(config.webhookSecret!)).toBe(SECRET);
    expect(config.database).toMatchObject({ backend: "postgresql", host: "db.internal", port: 5432, database: "service", user: "svc", password: "pw" });
  });

  test("the database URL can come from a file", () => {
    const { SERVICE_DATABASE_URL: _, ...rest } = PROD;
    const config = loadConfig({ ...rest, SERVICE_DATABASE_URL_FILE: "/run/secrets/db-url" }, io);
    expect(config.database).toMatchObject({ backend: "postgresql", host: "db.internal" });
  });

  test("the described configuration carries no secret", () => {
    const text = JSON.stringify(describeConfig(loadConfig(PROD, io)));
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("pw");
    expect(text).not.toContain("PRIVATE KEY");
    expect(text).toContain('"forge_private_key":"loaded"');
  });
});

describe("production validation rejects", () => {
  const cases: Array<[string, Record<string, string | undefined>, string, RegExp]> = [
    ["the embedded database", { SERVICE_DATABASE_URL: "sqlite:./service.db" }, "SERVICE_DATABASE_URL", /development only/],
    ["a missing database URL", { SERVICE_DATABASE_URL: undefined }, "SERVICE_DATABASE_URL", /required in production/],
    ["the postgres:// alias scheme", { SERVICE_DATABASE_URL: "postgres://svc:pw@localhost/service" }, "SERVICE_DATABASE_URL", /only the postgresql:\/\/ scheme/],
    ["a foreign scheme", { SERVICE_DATABASE_URL: "mysql://svc:pw@localhost/service" }, "SERVICE_DATABASE_URL", /only the postgresql/],
    ["a hostless URL", { SERVICE_DATABASE_URL: "postgresql://svc:pw@/service" }, "SERVICE_DATABASE_URL", /explicit host/],
    ["comma-separated hosts", { SERVICE_DATABASE_URL: "postgresql://svc:pw@a:5432,b:5432/service?sslmode=verify-full" }, "SERVICE_DATABASE_URL", /comma-separated/],
    ["comma-separated host parameter", { SERVICE_DATABASE_URL: "postgresql://svc:pw@/service?host=a,b&sslmode=verify-full" }, "SERVICE_DATABASE_URL", /comma-separated/],
    ["a missing database name", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/" }, "SERVICE_DATABASE_URL", /database name/],
    ["a missing user", { SERVICE_DATABASE_URL: "postgresql://localhost/service" }, "SERVICE_DATABASE_URL", /user name/],
    ["a missing password", { SERVICE_DATABASE_URL: "postgresql://svc@localhost/service" }, "SERVICE_DATABASE_URL", /non-empty password/],
    ["an empty password", { SERVICE_DATABASE_URL: "postgresql://svc:@localhost/service" }, "SERVICE_DATABASE_URL", /non-empty password/],
    ["port 0", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost:0/service" }, "SERVICE_DATABASE_URL", /1 to 65535/],
    ["port 65536", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost:65536/service" }, "SERVICE_DATABASE_URL", /1 to 65535/],
    ["a non-numeric port", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost:http/service" }, "SERVICE_DATABASE_URL", /1 to 65535/],
    ["a remote host without sslmode", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service" }, "SERVICE_DATABASE_URL", /verify-full/],
    ["sslmode=require", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=require" }, "SERVICE_DATABASE_URL", /sslmode=require/],
    ["sslmode=verify-ca", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=verify-ca" }, "SERVICE_DATABASE_URL", /sslmode=verify-ca/],
    ["sslmode=require even on loopback", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/service?sslmode=require" }, "SERVICE_DATABASE_URL", /sslmode=require/],
    ["sslmode=prefer", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=prefer" }, "SERVICE_DATABASE_URL", /sslmode=prefer/],
    ["a remote host with sslmode=disable", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=disable" }, "SERVICE_DATABASE_URL", /remote host needs sslmode=verify-full/],
    ["hostaddr without host", { SERVICE_DATABASE_URL: "postgresql://svc:pw@/service?hostaddr=10.0.0.5&sslmode=verify-full" }, "SERVICE_DATABASE_URL", /explicit host/],
    ["hostaddr without verify-full", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/service?hostaddr=127.0.0.1" }, "SERVICE_DATABASE_URL", /hostaddr needs/],
    ["a non-numeric hostaddr", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?hostaddr=db2&sslmode=verify-full" }, "SERVICE_DATABASE_URL", /numeric IP/],
    ["an unknown query parameter", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/service?application_name=x" }, "SERVICE_DATABASE_URL", /application_name is not allowed/],
    ["gssencmode", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/service?gssencmode=disable" }, "SERVICE_DATABASE_URL", /gssencmode is not allowed/],
    ["a connection-service URL", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/service?service=prod" }, "SERVICE_DATABASE_URL", /service is not allowed/],
    ["a password file parameter", { SERVICE_DATABASE_URL: "postgresql://svc:pw@localhost/service?passfile=/x" }, "SERVICE_DATABASE_URL", /passfile is not allowed/],
    ["a relative sslrootcert", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=verify-full&sslrootcert=ca.pem" }, "SERVICE_DATABASE_URL", /absolute path/],
    ["an empty sslrootcert", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=verify-full&sslrootcert=" }, "SERVICE_DATABASE_URL", /absolute path/],
    ["an unreadable sslrootcert", { SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?sslmode=verify-full&sslrootcert=/nope.pem" }, "SERVICE_DATABASE_URL", /cannot be read/],
    ["the service-file variable", { PGSERVICEFILE: "/etc/pg_service.conf" }, "PGSERVICEFILE", /ambient/],
    ["the password-file variable", { PGPASSFILE: "/root/.pgpass" }, "PGPASSFILE", /ambient/],
    ["an ambient PGHOST", { PGHOST: "elsewhere" }, "PGHOST", /ambient/],
    ["an empty ambient PGPASSWORD", { PGPASSWORD: "" }, "PGPASSWORD", /ambient/],
    ["a short webhook secret", { SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/short" }, "SERVICE_FORGE_WEBHOOK_SECRET_FILE", /at least 32 UTF-8 bytes/],
    ["a missing webhook secret", { SERVICE_FORGE_WEBHOOK_SECRET_FILE: undefined }, "SERVICE_FORGE_WEBHOOK_SECRET_FILE", /required in production/],
    ["an unreadable webhook secret file", { SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/absent" }, "SERVICE_FORGE_WEBHOOK_SECRET_FILE", /cannot be read/],
    ["an unreadable decisions token file", { SERVICE_DECISIONS_TOKEN_FILE: "/run/secrets/absent" }, "SERVICE_DECISIONS_TOKEN_FILE", /cannot be read/],
    ["a decisions token file that repeats a name", { SERVICE_DECISIONS_TOKEN_FILE: "/run/secrets/decisions-dup" }, "SERVICE_DECISIONS_TOKEN_FILE", /repeats the name/],
    ["a missing App ID", { SERVICE_FORGE_APP_ID: undefined }, "SERVICE_FORGE_APP_ID", /required in production/],
    ["a non-numeric App ID", { SERVICE_FORGE_APP_ID: "12ab" }, "SERVICE_FORGE_APP_ID", /positive integer/],
    ["a missing private key", { SERVICE_FORGE_PRIVATE_KEY_FILE: undefined }, "SERVICE_FORGE_PRIVATE_KEY_FILE", /required in production/],
    ["a file that is not a private key", { SERVICE_FORGE_PRIVATE_KEY_FILE: "/run/secrets/not-a-key" }, "SERVICE_FORGE_PRIVATE_KEY_FILE", /RSA private key/],
    ["an attestation key file that is not a key", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/not-a-key" }, "SERVICE_ATTESTATION_KEY_FILE", /holds no PEM private key/],
    ["a malformed attestation key", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/attestation-truncated" }, "SERVICE_ATTESTATION_KEY_FILE", /cannot be read \(malformed or truncated\)/],
    ["an RSA attestation key", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/key.pem" }, "SERVICE_ATTESTATION_KEY_FILE", /must be Ed25519 or ECDSA P-256/],
    ["a P-384 attestation key", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/attestation-p384" }, "SERVICE_ATTESTATION_KEY_FILE", /must be on curve P-256/],
    ["an encrypted attestation key", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/attestation-encrypted" }, "SERVICE_ATTESTATION_KEY_FILE", /encrypted/],
    ["an unreadable attestation key file", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/absent" }, "SERVICE_ATTESTATION_KEY_FILE", /cannot be read/],
    ["older public keys without a signing key", { SERVICE_ATTESTATION_PUBLIC_KEYS_FILE: "/run/secrets/not-a-key" }, "SERVICE_ATTESTATION_PUBLIC_KEYS_FILE", /needs SERVICE_ATTESTATION_KEY_FILE/],
    ["older public keys that are not keys", { SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/attestation-ed25519", SERVICE_ATTESTATION_PUBLIC_KEYS_FILE: "/run/secrets/not-a-key" }, "SERVICE_ATTESTATION_PUBLIC_KEYS_FILE", /no PEM public key/],
    ["a non-HTTPS forge API origin", { SERVICE_FORGE_API_URL: "http://api.forge.example" }, "SERVICE_FORGE_API_URL", /https/],
    ["a non-HTTPS forge web origin", { SERVICE_FORGE_WEB_URL: "http://forge.example" }, "SERVICE_FORGE_WEB_URL", /https/],
  ];
  for (const [name, change, variable, rule] of cases) {
    test(name, () => {
      const error = rejection({ ...PROD, ...change });
      expect(error.variable).toBe(variable);
      expect(error.message).toMatch(rule);
      expect(error.message.startsWith(`${variable}: `)).toBe(true);
    });
  }

  test("an attestation key that is refused is never repeated in the message", () => {
    for (const file of ["/run/secrets/key.pem", "/run/secrets/attestation-p384"]) {
      const body = FILES[file]!.split("\n")[1]!;
      expect(rejection({ ...PROD, SERVICE_ATTESTATION_KEY_FILE: file }).message).not.toContain(body.slice(0, 24));
    }
    expect(loadConfig({ ...PROD, SERVICE_ATTESTATION_KEY_FILE: "/run/secrets/attestation-ed25519" }, io).attestation).not.toBeNull();
    expect(loadConfig(PROD, io).attestation).toBeNull();
  });

  test("no rejection message repeats the password or the URL", () => {
    const error = rejection({ ...PROD, SERVICE_DATABASE_URL: "postgresql://svc:hunter2secret@db.internal/service?sslmode=require" });
    expect(error.message).not.toContain("hunter2secret");
    expect(error.message).not.toContain("db.internal");
  });

  test("loopback and Unix-socket hosts may skip TLS", () => {
    for (const url of [
      "postgresql://svc:pw@localhost:5432/service",
      "postgresql://svc:pw@127.0.0.1/service?sslmode=disable",
      "postgresql://svc:pw@[::1]:5433/service",
      "postgresql://svc:pw@/service?host=/var/run/postgresql",
      "postgresql://svc:pw@%2Fvar%2Frun%2Fpostgresql/service",
    ]) {
      expect(loadConfig({ ...PROD, SERVICE_DATABASE_URL: url }, io).database.backend).toBe("postgresql");
    }
  });

  test("hostaddr with host and verify-full is accepted", () => {
    const config = loadConfig({ ...PROD, SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal/service?hostaddr=10.1.2.3&sslmode=verify-full" }, io);
    expect(config.database).toMatchObject({ host: "db.internal", hostaddr: "10.1.2.3", tls: { mode: "verify-full", caFile: null } });
  });
});

describe("database scope", () => {
  test("database migrate and check need no forge credentials in production, but every database rule still applies", () => {
    const { SERVICE_FORGE_APP_ID: _a, SERVICE_FORGE_PRIVATE_KEY_FILE: _k, SERVICE_FORGE_WEBHOOK_SECRET_FILE: _w, ...databaseOnly } = PROD;
    expect(loadConfig(databaseOnly, io, "database").database).toMatchObject({ backend: "postgresql", host: "db.internal" });
    expect(() => loadConfig(databaseOnly, io)).toThrow(ConfigError);
    expect(() => loadConfig({ ...databaseOnly, SERVICE_DATABASE_URL: "sqlite:./x.db" }, io, "database")).toThrow(/development only/);
    expect(() => loadConfig({ ...databaseOnly, PGHOST: "x" }, io, "database")).toThrow(/ambient/);
    expect(() => loadConfig({ ...databaseOnly, SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/short" }, io, "database")).toThrow(/32 UTF-8 bytes/);
  });
});

describe("other settings", () => {
  test("an unknown SERVICE_ variable is rejected by name", () => {
    expect(rejection({ SERVICE_WORKER_ENABLE: "true" }).variable).toBe("SERVICE_WORKER_ENABLE");
  });
  test("booleans accept only true and false", () => {
    expect(rejection({ SERVICE_ALLOW_INSECURE_CHANGES: "yes" }).message).toMatch(/true or false/);
    expect(loadConfig({ SERVICE_ALLOW_INSECURE_CHANGES: "true" }, io).allowInsecureChanges).toBe(true);
  });
  test("the invalidation timeout stays inside the webhook deadline (1..9 s)", () => {
    expect(rejection({ SERVICE_WEBHOOK_INVALIDATION_TIMEOUT_SECONDS: "10" }).message).toMatch(/1 to 9/);
    expect(rejection({ SERVICE_WEBHOOK_INVALIDATION_TIMEOUT_SECONDS: "0" }).message).toMatch(/1 to 9/);
    expect(loadConfig({ SERVICE_WEBHOOK_INVALIDATION_TIMEOUT_SECONDS: "9" }, io).webhookInvalidationTimeoutSeconds).toBe(9);
  });
  test("the unverified body budget holds at least one 10 MiB body and at most 512 MiB", () => {
    for (const bad of ["10485759", "536870913", "64MiB", "-1"]) {
      expect(rejection({ SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES: bad }).message).toMatch(/10485760 to 536870912/);
    }
    expect(loadConfig({ SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES: "10485760" }, io).webhookUnverifiedBodyBudgetBytes).toBe(10 * 1024 * 1024);
    expect(loadConfig({ SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES: "536870912" }, io).webhookUnverifiedBodyBudgetBytes).toBe(512 * 1024 * 1024);
  });
  test("the full sweep period is 1..168 hours (default 24) and covers at least one reconcile interval", () => {
    expect(loadConfig({}, io).reconcileFullSweepHours).toBe(24);
    expect(loadConfig({ SERVICE_RECONCILE_FULL_SWEEP_HOURS: "168" }, io).reconcileFullSweepHours).toBe(168);
    for (const bad of ["0", "169", "1.5", "24h", "-1"]) expect(rejection({ SERVICE_RECONCILE_FULL_SWEEP_HOURS: bad }).message).toMatch(/1 to 168/);
    expect(rejection({ SERVICE_RECONCILE_FULL_SWEEP_HOURS: "1", SERVICE_RECONCILE_INTERVAL_SECONDS: "3601" }).variable).toBe("SERVICE_RECONCILE_FULL_SWEEP_HOURS");
    expect(loadConfig({ SERVICE_RECONCILE_FULL_SWEEP_HOURS: "1", SERVICE_RECONCILE_INTERVAL_SECONDS: "3600" }, io).reconcileFullSweepHours).toBe(1);
  });
  test("the worker lease is bounded to 3..600 seconds", () => {
    expect(loadConfig({ SERVICE_DECISION_RETENTION_DAYS: "30" }, io).decisionRetentionDays).toBe(30);
    expect(loadConfig({ SERVICE_DECISION_RETENTION_DAYS: "3650" }, io).decisionRetentionDays).toBe(3650);
    for (const bad of ["29", "3651", "0", "400.5", "1y", "-400"]) expect(rejection({ SERVICE_DECISION_RETENTION_DAYS: bad }).message).toMatch(/30 to 3650/);
    expect(rejection({ SERVICE_WORKER_LEASE_SECONDS: "2" }).message).toMatch(/3 to 600/);
    expect(loadConfig({ SERVICE_WORKER_LEASE_SECONDS: "5" }, io).workerLeaseSeconds).toBe(5);
  });
  test("the forge request budgets are bounded: room for one write a minute, at most the forge's 100 concurrent requests", () => {
    const ranges: Array<[string, keyof ReturnType<typeof loadConfig>["forge"]["requestBudget"], number, number]> = [
      ["SERVICE_FORGE_POINTS_PER_MINUTE", "pointsPerMinute", 10, 1_000_000],
      ["SERVICE_FORGE_WRITES_PER_MINUTE", "writesPerMinute", 1, 100_000],
      ["SERVICE_FORGE_CONCURRENT_REQUESTS", "concurrentRequests", 1, 100],
      ["SERVICE_FORGE_RATE_LIMIT_RESERVE", "rateLimitReserve", 0, 15_000],
    ];
    for (const [variable, field, min, max] of ranges) {
      for (const bad of [String(min - 1), String(max + 1), "1.5", "many"]) {
        const error = rejection({ [variable]: bad });
        expect([error.variable, error.message]).toEqual([variable, `${variable}: must be an integer from ${min} to ${max}`]);
      }
      expect(loadConfig({ [variable]: String(min) }, io).forge.requestBudget[field]).toBe(min);
      expect(loadConfig({ [variable]: String(max) }, io).forge.requestBudget[field]).toBe(max);
    }
  });
  test("the identity freshness window must cover two probe intervals", () => {
    expect(rejection({ SERVICE_FORGE_IDENTITY_PROBE_INTERVAL_SECONDS: "60", SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS: "90" }).variable).toBe("SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS");
    expect(rejection({ SERVICE_FORGE_IDENTITY_PROBE_INTERVAL_SECONDS: "4" }).message).toMatch(/5 to 300/);
    expect(rejection({ SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS: "3601" }).message).toMatch(/to 3600/);
  });
  test("the App ID and key must come together", () => {
    expect(rejection({ SERVICE_FORGE_APP_ID: "5" }).variable).toBe("SERVICE_FORGE_PRIVATE_KEY_FILE");
  });
  test("the database URL and its file form are exclusive", () => {
    expect(rejection({ SERVICE_DATABASE_URL: "sqlite:x.db", SERVICE_DATABASE_URL_FILE: "/run/secrets/db-url" }).variable).toBe("SERVICE_DATABASE_URL_FILE");
  });
  test("the policy path must be a relative repository path", () => {
    for (const bad of ["/abs.toml", "a/../b.toml", "dir/", "./x.toml"]) {
      expect(rejection({ SERVICE_POLICY_PATH: bad }).variable).toBe("SERVICE_POLICY_PATH");
    }
  });
  test("the forge directory moves the policy path's and the organization policy repository's defaults", () => {
    const github = loadConfig({ SERVICE_FORGE_DIRECTORY: ".github" }, io);
    expect(github.forgeDirectory).toBe(".github");
    expect(github.policyPath).toBe(".github/service-policy.toml");
    expect(github.organizationPolicyRepository).toBe(".github");
    expect(describeConfig(github).forge_directory).toBe(".github");
  });
  test("an explicit policy path and organization policy repository win over the forge directory's defaults", () => {
    const config = loadConfig({ SERVICE_FORGE_DIRECTORY: ".github", SERVICE_POLICY_PATH: "ci/policy.toml", SERVICE_ORGANIZATION_POLICY_REPOSITORY: "policies" }, io);
    expect(config.policyPath).toBe("ci/policy.toml");
    expect(config.organizationPolicyRepository).toBe("policies");
  });
  const badDirectories: [string, string, RegExp][] = [
    ["empty", "", /must not be empty/],
    ["the parent directory", "..", /not '\.' or '\.\.'/],
    ["the current directory", ".", /not '\.' or '\.\.'/],
    ["a path with /", ".github/workflows", /single directory name/],
    ["a path with \\", ".github\\x", /single directory name/],
    ["a name not starting with .", "github", /must start with '\.'/],
    ["a control character", ".git\u0007hub", /letters, digits/],
    ["a newline", ".github\n", /letters, digits/],
    ["a CODEOWNERS wildcard", ".git*", /letters, digits/],
    ["a space", ".my forge", /letters, digits/],
    ["too long", "." + "a".repeat(100), /at most 100 characters/],
  ];
  for (const [what, value, message] of badDirectories) {
    test(`a forge directory that is ${what} is a configuration error naming SERVICE_FORGE_DIRECTORY`, () => {
      const error = rejection({ SERVICE_FORGE_DIRECTORY: value });
      expect(error.variable).toBe("SERVICE_FORGE_DIRECTORY");
      expect(error.message).toMatch(message);
    });
  }
  test("a forge directory of exactly 100 characters is accepted", () => {
    expect(loadConfig({ SERVICE_FORGE_DIRECTORY: "." + "a".repeat(99) }, io).forgeDirectory).toHaveLength(100);
  });
  test("the forge API URL must be an origin", () => {
    expect(rejection({ SERVICE_FORGE_API_URL: "https://api.example/v3" }).message).toMatch(/origin only/);
  });
});

describe("setup mode", () => {
  const SETUP = { SERVICE_SETUP_ENABLED: "true", SERVICE_PUBLIC_URL: "https://approvals.example.com", SERVICE_SETUP_STATE_SECRET: "x".repeat(32) };
  test("enabled with valid settings loads", () => {
    const config = loadConfig(SETUP, io);
    expect(config.setup).toMatchObject({ enabled: true, publicUrl: "https://approvals.example.com" });
  });
  test("enabled without a public URL fails", () => {
    expect(rejection({ ...SETUP, SERVICE_PUBLIC_URL: undefined }).variable).toBe("SERVICE_PUBLIC_URL");
  });
  test("an http public URL on a host that is not loopback fails, naming the setting", () => {
    for (const url of ["http://approvals.example.com", "http://10.0.0.1:8080", "http://[::2]:8080", "http://localhost.example.com", "http://127.0.0.1.nip.io"]) {
      const error = rejection({ ...SETUP, SERVICE_PUBLIC_URL: url });
      expect(error.variable).toBe("SERVICE_PUBLIC_URL");
      expect(error.message).toMatch(/https/);
    }
  });
  test("an http public URL on a loopback address loads (a browser on the same machine, a port-forward)", () => {
    for (const [url, origin] of [["http://127.0.0.1:8080", "http://127.0.0.1:8080"], ["http://127.8.9.10", "http://127.8.9.10"], ["http://[::1]:8080", "http://[::1]:8080"], ["http://localhost:8080/", "http://localhost:8080"], ["http://LOCALHOST:9", "http://localhost:9"]]) {
      expect(loadConfig({ ...SETUP, SERVICE_PUBLIC_URL: url }, io).setup).toMatchObject({ enabled: true, publicUrl: origin });
    }
  });
  test("an http public URL on a loopback address loads in production too (it never leaves the machine)", () => {
    expect(loadConfig({ ...PROD, ...SETUP, SERVICE_PUBLIC_URL: "http://127.0.0.1:8080" }, io).setup).toMatchObject({ publicUrl: "http://127.0.0.1:8080" });
  });
  for (const bad of ["https://approvals.example.com/app", "https://approvals.example.com/?a=1", "https://approvals.example.com/#x", "https://user:pw@approvals.example.com"]) {
    test(`a public URL that is not only an origin fails: ${bad.replace(/user:pw/, "user-info")}`, () => {
      expect(rejection({ ...SETUP, SERVICE_PUBLIC_URL: bad }).variable).toBe("SERVICE_PUBLIC_URL");
    });
  }
  test("the setup URL defaults to the public URL", () => {
    expect(loadConfig(SETUP, io).setup).toMatchObject({ publicUrl: "https://approvals.example.com", setupUrl: "https://approvals.example.com" });
  });
  test("a setup URL of its own may be plain http on a loopback address (a port-forward), the public URL staying the webhook's", () => {
    const config = loadConfig({ ...PROD, ...SETUP, SERVICE_SETUP_URL: "http://127.0.0.1:8080" }, io);
    expect(config.setup).toMatchObject({ publicUrl: "https://approvals.example.com", setupUrl: "http://127.0.0.1:8080" });
  });
  for (const bad of ["http://approvals.example.com", "http://192.168.1.5:8080", "https://127.0.0.1:8080/setup", "not a url"]) {
    test(`a setup URL that is neither an https origin nor a loopback http origin fails, naming the setting: ${bad}`, () => {
      expect(rejection({ ...SETUP, SERVICE_SETUP_URL: bad }).variable).toBe("SERVICE_SETUP_URL");
    });
  }
  test("enabled with a short state secret fails", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET: "x".repeat(31) }).message).toMatch(/at least 32 bytes/);
  });
  test("enabled without a state secret fails", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET: undefined }).variable).toBe("SERVICE_SETUP_STATE_SECRET");
  });
  test("the state secret must differ from the webhook secret", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET: SECRET, SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/webhook" }).message).toMatch(/differ/);
  });
  test("disabled, the other setup settings are optional", () => {
    expect(loadConfig({ SERVICE_SETUP_ENABLED: "false" }, io).setup.enabled).toBe(false);
  });
});

describe("decisions token file", () => {
  test("absent: no token reader; present: the named readers, holding digests only", () => {
    expect(loadConfig(PROD, io).decisionsTokens).toEqual([]);
    const config = loadConfig({ ...PROD, SERVICE_DECISIONS_TOKEN_FILE: "/run/secrets/decisions-tokens" }, io);
    expect(config.decisionsTokens.map((t) => t.name)).toEqual(["auditor"]);
    expect(JSON.stringify(describeConfig(config))).not.toContain("t".repeat(40));
  });
});
