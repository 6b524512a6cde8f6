import { defineConfig, devices } from "@playwright/test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Playwright drives Debian's Chromium (never a downloaded browser: RECIPES 8) against the compiled binary on the embedded
 * database in a temp directory. Run through `npm test`.
 */
// The config is evaluated again in every worker process: choose the port and data directory once and pass them on.
process.env.E2E_SERVICE_PORT ??= String(38000 + Math.floor(Math.random() * 1000));
if (!process.env.E2E_SERVICE_DATA) {
  // A fixed folder under dist/ (git-ignored; not Playwright's outputDir, which it empties after loading the config), emptied
  // per run, instead of a new temp folder every run.
  const folder = join(fileURLToPath(new URL("..", import.meta.url)), "dist", "playwright-service");
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  process.env.E2E_SERVICE_DATA = folder;
}
const port = Number(process.env.E2E_SERVICE_PORT);
const data = process.env.E2E_SERVICE_DATA;
// The decision records are read only with a credential: the service gets one reader token, specs that read them present it.
process.env.E2E_DECISIONS_TOKEN ??= "playwright-reader-token-0123456789abcdef";
writeFileSync(join(data, "decisions-tokens"), `playwright:${process.env.E2E_DECISIONS_TOKEN}\n`);
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
    env: {
      SERVICE_DATABASE_URL: `sqlite:${join(data, "service.db")}`, SERVICE_HOST: "127.0.0.1", SERVICE_PORT: String(port), SERVICE_LOG_LEVEL: "warn",
      SERVICE_DECISIONS_TOKEN_FILE: join(data, "decisions-tokens"),
    },
    url: `http://127.0.0.1:${port}/health/live`,
    reuseExistingServer: false,
    timeout: 30_000,
  },
});
