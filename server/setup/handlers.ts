// The three setup routes as plain functions of the request URL (spec "Setup routes", "Errors"; DESIGN 3.6):
//   GET /setup            404 disabled · 400 malformed organization · 200 form posting the manifest to the forge
//   GET /setup/callback   422 code or state missing (checked first) · 404 disabled · 400 invalid, expired or tampered state
//                         (checked before any exchange) · 400 rejected exchange or incomplete credentials · 502 forge unavailable
//                         · 200 the credentials, shown once
//   GET /setup/complete   404 disabled · 200 configuration pointer
// The callback's query and the credentials never reach a log line: log entries carry a fixed outcome word and nothing else.
import type { Logger } from "../observability/logger.ts";
import { type ExchangeCode } from "./exchange.ts";
import { setupHeaders } from "./html.ts";
import { buildManifest, creationUrl, isOrganizationLogin } from "./manifest.ts";
import { completePage, errorPage, setupPage, successPage } from "./pages.ts";
import { setupStateAudience, signSetupState, verifySetupState } from "./state.ts";

export type SetupMode = { readonly enabled: false } | { readonly enabled: true; readonly publicUrl: string; readonly stateSecret: Uint8Array };

export interface SetupDeps {
  readonly setup: SetupMode;
  readonly forgeWebUrl: string;
  readonly forgeApiUrl: string;
  readonly exchange: ExchangeCode;
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
  const state = signSetupState(deps.setup.stateSecret, setupStateAudience(deps.setup.publicUrl), deps.now());
  return setupPage({ manifest: buildManifest(deps.setup.publicUrl, org), action: creationUrl(deps.forgeWebUrl, org, state), organization: org, forgeWebUrl: deps.forgeWebUrl });
}

export async function handleCallback(deps: SetupDeps, url: URL): Promise<Response> {
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
  const check = verifySetupState(deps.setup.stateSecret, state, setupStateAudience(deps.setup.publicUrl), deps.now());
  if (!check.ok) {
    outcome(`state_${check.reason}`);
    const message = check.reason === "expired"
      ? "The setup link expired (it is valid for 10 minutes). Start the setup again. If the forge already created the App, delete it in the forge's App settings or generate its keys there."
      : "The state in this address is not one this service signed for this callback (altered, for another service, or signed with another secret). The code was not used. Start the setup again.";
    return errorPage(400, check.reason === "expired" ? "Setup link expired" : "Invalid setup state", message);
  }
  const result = await deps.exchange(code);
  outcome(`exchange_${result.kind}`);
  switch (result.kind) {
    case "ok":
      return successPage({ credentials: result.credentials, forgeApiUrl: deps.forgeApiUrl, forgeWebUrl: deps.forgeWebUrl });
    case "rejected":
      return errorPage(400, "Code refused by the forge", "The forge refused the code: it was already used (this page is shown once), it expired, or it is unknown. If the App was created, find it in the forge's App settings, generate a private key and webhook secret there, or delete it and start again.");
    case "incomplete":
      return errorPage(400, "Incomplete credentials", "The forge's answer lacked one of the App ID, slug, private key, webhook secret or client credentials, so nothing is shown. Find the App in the forge's App settings and generate the missing credentials there.");
    case "unavailable":
      return errorPage(502, "The forge did not answer", "The forge could not be reached or did not answer in time; the code may still be valid. Reload this page to try again.");
  }
}

export function handleComplete(deps: SetupDeps): Response {
  if (!deps.setup.enabled) return notFound();
  return completePage();
}
