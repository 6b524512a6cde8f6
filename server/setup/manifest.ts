// The App manifest GET /setup posts to the forge (spec "Setup routes", manifest defaults), and where it is posted.

/** Repository permissions of the App: the spec's list, and `merge_queues: read` for merge groups (the `merge_group` event and the
 *  queue's entries the group's check is judged by). `statuses: write` only makes the App selectable as an expected
 *  source in organization rulesets; runtime installation tokens omit it. Never Actions, Administration, Issues, Workflows or
 *  Pull requests write. */
export const SETUP_PERMISSIONS: Readonly<Record<string, "read" | "write">> = Object.freeze({
  checks: "write",
  statuses: "write",
  contents: "read",
  metadata: "read",
  pull_requests: "read",
  members: "read",
  merge_queues: "read",
});

/** Subscribed events (installation and installation-repositories events are delivered without a subscription). */
export const SETUP_EVENTS: readonly string[] = Object.freeze([
  "check_run", "installation_target", "label", "member", "membership", "merge_group", "organization",
  "pull_request", "pull_request_review", "push", "repository", "team", "team_add",
]);

/** Default App name; the forge limits App names to 34 characters and the administrator may change it on the forge's page. */
export const DEFAULT_APP_NAME = "Code-owner approval";
const MAX_APP_NAME = 34;

/** An organization login as the forge allows it: letters, digits and single inner hyphens, at most 39 characters. */
const ORGANIZATION = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;

export function isOrganizationLogin(text: string): boolean {
  return ORGANIZATION.test(text);
}

export interface AppManifest {
  name: string;
  url: string;
  description: string;
  hook_attributes: { url: string; active: true };
  redirect_url: string;
  /** Where the forge sends a person back after signing in to read decision records (the App's OAuth web flow). */
  callback_urls: string[];
  public: false;
  default_permissions: Record<string, string>;
  default_events: string[];
}

export function appName(organization: string | null): string {
  const named = organization ? `${organization} code-owner approval` : DEFAULT_APP_NAME;
  return named.length <= MAX_APP_NAME ? named : DEFAULT_APP_NAME;
}

/**
 * The manifest for this service: the forge reaches it at `publicUrl` (homepage and webhook), the administrator's browser at
 * `setupUrl` (the callback). Both are origins validated by configuration: HTTPS, or plain HTTP on a loopback address.
 */
export function buildManifest(urls: { readonly publicUrl: string; readonly setupUrl: string }, organization: string | null): AppManifest {
  const origin = urls.publicUrl.replace(/\/+$/, "");
  return {
    name: appName(organization),
    url: origin,
    description: "Decides whether a pull request may merge with respect to code-owner approval and publishes a check run on the exact head commit.",
    hook_attributes: { url: `${origin}/webhooks/forge`, active: true },
    redirect_url: `${urls.setupUrl.replace(/\/+$/, "")}/setup/callback`,
    // The operator's browser reaches the service where it reached setup: signing in to the decision records comes back there.
    callback_urls: [`${urls.setupUrl.replace(/\/+$/, "")}/auth/callback`],
    public: false,
    default_permissions: { ...SETUP_PERMISSIONS },
    default_events: [...SETUP_EVENTS],
  };
}

/** The forge's App creation page: the organization's App settings, or the administrator's personal ones. */
export function creationUrl(forgeWebUrl: string, organization: string | null, state: string): string {
  const origin = forgeWebUrl.replace(/\/+$/, "");
  const path = organization ? `/organizations/${encodeURIComponent(organization)}/settings/apps/new` : "/settings/apps/new";
  return `${origin}${path}?state=${encodeURIComponent(state)}`;
}
