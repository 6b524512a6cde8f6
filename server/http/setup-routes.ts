import { Elysia } from "elysia";
import type { Config } from "../config/index.ts";
import type { Logger } from "../observability/logger.ts";
import { createExchange, createUsedStates, type ExchangeCode, handleCallback, handleComplete, handleSetup, type SetupDeps } from "../setup/index.ts";

export interface SetupRouteOptions {
  readonly config: Pick<Config, "setup" | "forge">;
  readonly log?: Pick<Logger, "info" | "warn">;
  /** Defaults to one manifest conversion against the configured forge API, bounded by SETUP_EXCHANGE_TIMEOUT_MS. */
  readonly exchange?: ExchangeCode;
  readonly now?: () => number;
}

/**
 * `/setup`, `/setup/callback`, `/setup/complete` (issue 11). Always registered, so that a missing code or state answers 422 even
 * when setup is disabled (DESIGN 3.6); each handler answers 404 itself when disabled. Handlers read the raw request URL (no
 * query schema: Elysia's validation errors would answer before our order of checks) and the application logs no request line,
 * so the callback's code, state and nonce cookie never reach a log. One set of used states per route group (single use).
 */
export function setupRoutes(options: SetupRouteOptions) {
  const deps: SetupDeps = {
    setup: options.config.setup,
    forgeWebUrl: options.config.forge.webUrl,
    forgeApiUrl: options.config.forge.apiUrl,
    exchange: options.exchange ?? createExchange({ apiUrl: options.config.forge.apiUrl }),
    usedStates: createUsedStates(),
    now: options.now ?? Date.now,
    ...(options.log ? { log: options.log } : {}),
  };
  const hide = { detail: { hide: true } };
  return new Elysia({ name: "setup" })
    .get("/setup", ({ request }) => handleSetup(deps, new URL(request.url)), hide)
    .get("/setup/callback", ({ request }) => handleCallback(deps, request), hide)
    .get("/setup/complete", () => handleComplete(deps), hide);
}
