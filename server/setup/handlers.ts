// The three setup routes as plain functions of the request (spec "Setup routes", "Errors"; DESIGN 3.6; issue 16):
//   GET /setup            404 disabled · 400 malformed organization · 200 form posting the manifest to the forge, with the
//                         browser's nonce cookie (nonce.ts) and a state naming the organization (or personal) and the nonce's hash
//   GET /setup/callback   422 code or state missing (checked first) · 404 disabled · 400 invalid, expired or tampered state
//                         · 400 state already used (used-states.ts) · 400 no nonce cookie or another setup's — all before any
//                         exchange · 502 forge unavailable (the state stays usable: a reload retries) · 400 rejected exchange,
//                         incomplete credentials, or an App owned by another account than the state names (nothing shown)
//                         · 200 the credentials, shown once
//   GET /setup/complete   404 disabled · 200 configuration pointer
// Once the callback used the browser's nonce (every outcome after the claim but 502), its response drops the cookie; a refusal
// before that leaves the browser's cookie alone (it may belong to a setup still in progress in another tab).
// The callback's query, cookie and the credentials never reach a log line: log entries carry a fixed outcome word and nothing else.
import type { AppCredentials } from "../forge/index.ts";
import type { Logger } from "../observability/logger.ts";
import { type ExchangeCode } from "./exchange.ts";
import { setupHeaders } from "./html.ts";
import { buildManifest, creationUrl, isOrganizationLogin } from "./manifest.ts";
import { clearedSetupNonceCookie, newSetupNonce, nonceMatches, readSetupNonce, setupNonceCookie } from "./nonce.ts";
import { completePage, errorPage, setupPage, successPage } from "./pages.ts";
import { SETUP_STATE_LIFETIME_SECONDS, setupStateAudience, signSetupState, verifySetupState } from "./state.ts";
import type { UsedStates } from "./used-states.ts";

export type SetupMode = { readonly enabled: false } | { readonly enabled: true; readonly publicUrl: string; readonly setupUrl: string; readonly stateSecret: Uint8Array };

export interface SetupDeps {
  readonly setup: SetupMode;
  readonly forgeWebUrl: string;
  readonly forgeApiUrl: string;
  readonly exchange: ExchangeCode;
  /** States already used by a callback of this process. */
  readonly usedStates: UsedStates;
  readonly now: () => number;
  readonly log?: Pick<Logger, "info" | "warn">;
}

/** Same body as the application's 404 for an unknown path, so a disabled setup is indistinguishable from an absent one. */
function notFound(): Response {
  return new Response(JSON.stringify({ error: "not_found" }), { status: 404, headers: setupHeaders("default-src 'none'; frame-ancestors 'none'", "application/json; charset=utf-8") });
}

/** One value of a query parameter: absent or empty → null; repeated → "repeated". */
function single(url: URL, name: string): string | null | "repeated" {
  const values = url.searchParams.getAll(name);
  if (values.length > 1) return "repeated";
  return values[0] ? values[0] : null;
}

export function handleSetup(deps: SetupDeps, url: URL): Response {
  if (!deps.setup.enabled) return notFound();
  const organization = url.searchParams.getAll("organization");
  if (organization.length > 1 || (organization.length === 1 && organization[0] !== "" && !isOrganizationLogin(organization[0]!))) {
    return errorPage(400, "Malformed organization name",
      "An organization name has letters, digits and single hyphens (not at the start or end), at most 39 characters. Open /setup?organization=<name>, or /setup alone to create the App on your personal account.");
  }
  const org = organization[0] ? organization[0] : null;
  const nonce = newSetupNonce();
  const state = signSetupState(deps.setup.stateSecret, setupStateAudience(deps.setup.setupUrl), deps.now(), { nonceHash: nonce.hash, organization: org });
  const response = setupPage({ manifest: buildManifest(deps.setup, org), action: creationUrl(deps.forgeWebUrl, org, state), organization: org, forgeWebUrl: deps.forgeWebUrl });
  response.headers.append("set-cookie", setupNonceCookie(nonce.nonce, SETUP_STATE_LIFETIME_SECONDS));
  return response;
}

/** Whether the exchanged App belongs to the account the state names: that organization (its login compared without regard to
 *  case), or for a personal setup a user (the forge's logged-in administrator, whose login the service never learns). */
function ownedAsStarted(organization: string | null, credentials: AppCredentials): boolean {
  if (credentials.ownerLogin === null) return false;
  if (organization === null) return credentials.ownerType === "User";
  return credentials.ownerType === "Organization" && credentials.ownerLogin.toLowerCase() === organization.toLowerCase();
}

/** The response, telling the browser to drop the nonce it just used. */
function nonceUsed(response: Response): Response {
  response.headers.append("set-cookie", clearedSetupNonceCookie());
  return response;
}

export async function handleCallback(deps: SetupDeps, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const code = single(url, "code");
  const state = single(url, "state");
  if (code === null || state === null) {
    return errorPage(422, "Missing code or state", "The forge sends you back here with both a one-use code and the signed state. Open this page only through the forge's redirect after creating the App.");
  }
  if (!deps.setup.enabled) return notFound();
  const outcome = (word: string) => deps.log?.info({ setup_callback: word }, "setup callback");
  if (code === "repeated" || state === "repeated") {
    outcome("malformed_query");
    return errorPage(400, "Malformed request", "The address carries more than one code or state. Start the setup again.");
  }
  const check = verifySetupState(deps.setup.stateSecret, state, setupStateAudience(deps.setup.setupUrl), deps.now());
  if (!check.ok) {
    outcome(`state_${check.reason}`);
    const message = check.reason === "expired"
      ? "The setup link expired (it is valid for 10 minutes). Start the setup again. If the forge already created the App, delete it in the forge's App settings or generate its keys there."
      : "The state in this address is not one this service signed for this callback (altered, for another service, or signed with another secret). The code was not used. Start the setup again.";
    return errorPage(400, check.reason === "expired" ? "Setup link expired" : "Invalid setup state", message);
  }
  const { claims } = check;
  const replayed = () => {
    outcome("state_replayed");
    return errorPage(400, "Setup link already used",
      "Each setup link works once, and this one was already used (reloading the page that showed the credentials shows this); the code was not used now. Start the setup again if you did not save the credentials, and delete the App the forge created in its App settings.");
  };
  // A used state is named as such first, so that reloading the credentials page (the cookie is gone by then) says why.
  if (deps.usedStates.has(claims.nonceHash)) return replayed();
  const nonce = readSetupNonce(request);
  if (nonce === null || !nonceMatches(nonce, claims.nonceHash)) {
    outcome(nonce === null ? "cookie_missing" : "cookie_mismatch");
    return errorPage(400, "Setup started in another browser",
      "This address works only in the browser that opened the setup page, and only for the latest setup started there; this browser has no matching setup cookie. The code was not used: open this address in the browser where you started the setup, or start the setup again.");
  }
  const claim = deps.usedStates.claim(claims.nonceHash, check.expiresAtMs, deps.now());
  if (claim === "replayed") return replayed(); // claim() is what enforces single use; has() above only orders the messages
  if (claim === "full") {
    outcome("state_capacity");
    return errorPage(400, "Too many setups in progress",
      "The service remembers a bounded number of setup links in use and that many are open now; the code was not used. Reload this page in a few minutes. If it persists, something is opening the setup page in a loop: keep /setup reachable from the operator network only.");
  }
  const result = await deps.exchange(code);
  if (result.kind === "unavailable") {
    deps.usedStates.release(claims.nonceHash); // the code may still be valid: a reload of this page retries with the same state
    outcome("exchange_unavailable");
    return errorPage(502, "The forge did not answer", "The forge could not be reached or did not answer in time; the code may still be valid. Reload this page to try again.");
  }
  if (result.kind === "ok" && !ownedAsStarted(claims.organization, result.credentials)) {
    outcome("owner_mismatch");
    const intended = claims.organization === null ? "your personal account" : `the organization ${claims.organization}`;
    return nonceUsed(errorPage(400, "App owned by another account",
      `The forge returned an App that is not owned by ${intended}, the account this setup was started for, so none of its credentials are shown. Delete that App in the forge's App settings and start the setup again for the intended account.`));
  }
  outcome(`exchange_${result.kind}`);
  switch (result.kind) {
    case "ok":
      return nonceUsed(successPage({ credentials: result.credentials, forgeApiUrl: deps.forgeApiUrl, forgeWebUrl: deps.forgeWebUrl }));
    case "rejected":
      return nonceUsed(errorPage(400, "Code refused by the forge", "The forge refused the code: it was already used (this page is shown once), it expired, or it is unknown. If the App was created, find it in the forge's App settings, generate a private key and webhook secret there, or delete it and start again."));
    case "incomplete":
      return nonceUsed(errorPage(400, "Incomplete credentials", "The forge's answer lacked one of the App ID, slug, private key, webhook secret or client ID, so nothing is shown. Find the App in the forge's App settings and generate the missing credentials there."));
  }
}

export function handleComplete(deps: SetupDeps): Response {
  if (!deps.setup.enabled) return notFound();
  return completePage();
}
