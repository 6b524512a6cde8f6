// Setup-mode configuration rules (spec "Setup routes", issue 11 item 1) not already covered by server/config/load-config.test.ts:
// the file form of the state secret, the forge web origin, a production setup, and what the routes receive.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { ConfigError, describeConfig, loadConfig } from "../config/index.ts";

const KEY = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const WEBHOOK_SECRET = "a-webhook-secret-that-is-long-enough-too";
const STATE_SECRET = "a-setup-state-secret-of-at-least-32-bytes";
const FILES: Record<string, string> = {
  "/run/secrets/state": `${STATE_SECRET}\n`,
  "/run/secrets/state-short": "short\n",
  "/run/secrets/webhook": `${WEBHOOK_SECRET}\n`,
  "/run/secrets/same-as-webhook": WEBHOOK_SECRET,
  "/run/secrets/key.pem": KEY,
  "/run/secrets/ca.pem": "-----BEGIN CERTIFICATE-----\n",
};
const io = { readFile: (path: string) => { const t = FILES[path]; if (t === undefined) throw new Error("ENOENT"); return t; } };
const SETUP = { SERVICE_SETUP_ENABLED: "true", SERVICE_PUBLIC_URL: "https://approvals.example.com", SERVICE_SETUP_STATE_SECRET_FILE: "/run/secrets/state" };

function rejection(env: Record<string, string | undefined>): ConfigError {
  try { loadConfig(env, io); } catch (error) { expect(error).toBeInstanceOf(ConfigError); return error as ConfigError; }
  throw new Error("configuration was accepted");
}

describe("setup-state secret from a file", () => {
  test("is read from SERVICE_SETUP_STATE_SECRET_FILE, its final newline ignored", () => {
    const config = loadConfig(SETUP, io);
    expect(config.setup.enabled && new TextDecoder().decode(config.setup.stateSecret)).toBe(STATE_SECRET);
  });
  test("a short one fails naming the file variable", () => {
    const error = rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET_FILE: "/run/secrets/state-short" });
    expect(error.variable).toBe("SERVICE_SETUP_STATE_SECRET_FILE");
    expect(error.message).toMatch(/at least 32 bytes/);
  });
  test("an unreadable file fails", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET_FILE: "/run/secrets/absent" }).variable).toBe("SERVICE_SETUP_STATE_SECRET_FILE");
  });
  test("both forms at once fail", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET: STATE_SECRET }).message).toMatch(/not both/);
  });
  test("a file equal to the webhook secret fails", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_STATE_SECRET_FILE: "/run/secrets/same-as-webhook", SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/webhook" }).message).toMatch(/differ/);
  });
});

describe("setup mode and the other settings", () => {
  test("SERVICE_SETUP_ENABLED must be a boolean", () => {
    expect(rejection({ ...SETUP, SERVICE_SETUP_ENABLED: "maybe" }).variable).toBe("SERVICE_SETUP_ENABLED");
  });
  test("disabled, the public URL is optional and not validated (spec: when disabled the other two settings are optional)", () => {
    for (const url of ["http://x", "https://approvals.example.com/app", "not a url"]) {
      expect(loadConfig({ SERVICE_PUBLIC_URL: url }, io).setup).toEqual({ enabled: false });
    }
  });
  test("the forge web origin defaults to the public forge's, is an origin only, and may be http outside production (the simulator)", () => {
    expect(loadConfig(SETUP, io).forge.webUrl).toBe("https://github.com");
    expect(loadConfig({ ...SETUP, SERVICE_FORGE_WEB_URL: "http://127.0.0.1:9000" }, io).forge.webUrl).toBe("http://127.0.0.1:9000");
    expect(rejection({ ...SETUP, SERVICE_FORGE_WEB_URL: "https://forge.example/login" }).variable).toBe("SERVICE_FORGE_WEB_URL");
  });
  test("in production, setup needs an HTTPS forge web origin, and loads with one", () => {
    const production = {
      SERVICE_ENVIRONMENT: "production",
      SERVICE_DATABASE_URL: "postgresql://svc:pw@db.internal:5432/service?sslmode=verify-full&sslrootcert=/run/secrets/ca.pem",
      SERVICE_FORGE_APP_ID: "1234", SERVICE_FORGE_PRIVATE_KEY_FILE: "/run/secrets/key.pem", SERVICE_FORGE_WEBHOOK_SECRET_FILE: "/run/secrets/webhook",
      ...SETUP,
    };
    expect(rejection({ ...production, SERVICE_FORGE_WEB_URL: "http://forge.example" }).variable).toBe("SERVICE_FORGE_WEB_URL");
    expect(loadConfig(production, io).setup.enabled).toBe(true);
  });
  test("the described settings show the public URL and never the state secret", () => {
    const described = JSON.stringify(describeConfig(loadConfig(SETUP, io)));
    expect(described).toContain('"setup_enabled":true');
    expect(described).toContain("https://approvals.example.com");
    expect(described).not.toContain(STATE_SECRET);
  });
});
