export { createExchange, isWellFormedCode, SETUP_EXCHANGE_TIMEOUT_MS, type ExchangeCode, type ExchangeOptions, type ExchangeResult } from "./exchange.ts";
export { handleCallback, handleComplete, handleSetup, type SetupDeps, type SetupMode } from "./handlers.ts";
export { contentSecurityPolicy, COPY_SCRIPT_HASH, escapeHtml, setupHeaders, STYLE_HASH } from "./html.ts";
export { appName, buildManifest, creationUrl, DEFAULT_APP_NAME, isOrganizationLogin, SETUP_EVENTS, SETUP_PERMISSIONS, type AppManifest } from "./manifest.ts";
export { newSetupNonce, SETUP_NONCE_COOKIE } from "./nonce.ts";
export { SECRETS_DIRECTORY, serviceSettings } from "./pages.ts";
export {
  MAX_SETUP_STATE_LENGTH, SETUP_STATE_CLOCK_SKEW_SECONDS, SETUP_STATE_LIFETIME_SECONDS, setupStateAudience, signSetupState, verifySetupState,
  type SetupStateClaims, type StateCheck, type StateRejection,
} from "./state.ts";
export { createUsedStates, MAX_REMEMBERED_SETUP_STATES, type UsedStates } from "./used-states.ts";
