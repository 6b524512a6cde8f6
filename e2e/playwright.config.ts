import { defineConfig, devices } from "@playwright/test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Playwright drives Debian's Chromium (never a downloaded browser: RECIPES 8) against the compiled binary on the embedded
 * database in a temp directory. Run through `npm test`.
 */
// The config is evaluated again in every worker process: choose the port and data directory once and pass them on.
process.env.E2E_SERVICE_PORT ??= String(38000 + Math.floor(Math.random() * 1000));
process.env.E2E_SERVICE_DATA ??= mkdtempSync(join(tmpdir(), "svc-pw-"));
const port = Number(process.env.E2E_SERVICE_PORT);
const data = process.env.E2E_SERVICE_DATA;
const root = fileURLToPath(new URL("..", import.meta.url));

export default defineConfig({
  testDir: ".",
  testMatch: "*.spec.ts",
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  outputDir: join(root, "test-results"),
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
    },
  },
  projects: [{ name: "chromium", use: { ...devices["Desktop Chrome"] } }],
  webServer: {
    command: `sh -c '${root}/dist/service database migrate && exec ${root}/dist/service serve'`,
    cwd: data,
    env: { SERVICE_DATABASE_URL: `sqlite:${join(data, "service.db")}`, SERVICE_HOST: "127.0.0.1", SERVICE_PORT: String(port), SERVICE_LOG_LEVEL: "warn" },
    url: `http://127.0.0.1:${port}/health/live`,
    reuseExistingServer: false,
    timeout: 30_000,
  },
});
