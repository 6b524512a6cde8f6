// The pages of the setup flow. Every value is HTML-escaped; the callback page is the only one with a script (the hashed copy
// script), and the only one that shows credentials. Nothing rendered here is logged or kept.
import type { AppCredentials } from "../forge/index.ts";
import { contentSecurityPolicy, escapeHtml as e, htmlResponse, page } from "./html.ts";
import type { AppManifest } from "./manifest.ts";

/** Where the success page tells the administrator to put the files. */
export const SECRETS_DIRECTORY = "/etc/codeowner-approval";

const PERMISSION_NAMES: Record<string, string> = {
  checks: "Checks", statuses: "Commit statuses", contents: "Contents", metadata: "Metadata", pull_requests: "Pull requests", members: "Members",
};

export interface SetupPageInput { manifest: AppManifest; action: string; organization: string | null; forgeWebUrl: string }

export function setupPage(input: SetupPageInput): Response {
  const { manifest } = input;
  const owner = input.organization ? `the organization <strong>${e(input.organization)}</strong>` : "your personal account";
  const permissions = Object.entries(manifest.default_permissions)
    .map(([name, level]) => `<tr><td>${e(PERMISSION_NAMES[name] ?? name)}</td><td>${e(level)}</td></tr>`).join("");
  const body = `
<h1>Create the code-owner approval App</h1>
<p>This creates a private App owned by ${owner} on <code>${e(input.forgeWebUrl)}</code>. The forge shows the App before it is
created; after you confirm, it sends you back here with the App's credentials, shown once.</p>
<table>
<tr><th>Name</th><td>${e(manifest.name)}</td></tr>
<tr><th>Visibility</th><td>private</td></tr>
<tr><th>Webhook URL</th><td><code id="webhook-url">${e(manifest.hook_attributes.url)}</code></td></tr>
<tr><th>Redirect URL</th><td><code>${e(manifest.redirect_url)}</code></td></tr>
${manifest.callback_urls.map((url) => `<tr><th>Sign-in callback URL</th><td><code id="sign-in-callback-url">${e(url)}</code></td></tr>`).join("\n")}
</table>
<h2>Repository permissions</h2>
<table id="permissions">${permissions}</table>
<p>Commit statuses write only makes the App selectable as an expected source in rulesets; the service's runtime tokens omit it.
No Actions, Administration, Issues, Workflows or Pull requests write.</p>
<h2>Events</h2>
<p id="events">${manifest.default_events.map((event) => `<code>${e(event)}</code>`).join(", ")}</p>
<p>Installation and installation-repositories events are delivered without a subscription.</p>
<form method="post" action="${e(input.action)}">
<input type="hidden" name="manifest" value="${e(JSON.stringify(manifest))}">
<button type="submit">Create App on the forge</button>
</form>
`;
  return htmlResponse(200, page("Create the App · Code-owner approval", body), contentSecurityPolicy({ formAction: new URL(input.forgeWebUrl).origin }));
}

export interface SuccessPageInput { credentials: AppCredentials; forgeApiUrl: string; forgeWebUrl: string }

/** The settings that run the service with the new App, as an env file. */
export function serviceSettings(input: SuccessPageInput): string {
  return [
    `SERVICE_FORGE_APP_ID=${input.credentials.id}`,
    `SERVICE_FORGE_PRIVATE_KEY_FILE=${SECRETS_DIRECTORY}/private-key.pem`,
    `SERVICE_FORGE_WEBHOOK_SECRET_FILE=${SECRETS_DIRECTORY}/webhook-secret`,
    ...(input.credentials.clientSecret === null ? [] : [`SERVICE_FORGE_CLIENT_ID=${input.credentials.clientId}`, `SERVICE_FORGE_CLIENT_SECRET_FILE=${SECRETS_DIRECTORY}/client-secret`]),
    `SERVICE_FORGE_API_URL=${input.forgeApiUrl}`,
    `SERVICE_FORGE_WEB_URL=${input.forgeWebUrl}`,
    "SERVICE_SETUP_ENABLED=false",
    "",
  ].join("\n");
}

function dataUrl(text: string, type: string): string {
  return `data:${type};base64,${Buffer.from(text, "utf8").toString("base64")}`;
}

function secretBlock(id: string, label: string, value: string, download?: { file: string; type: string }): string {
  const link = download ? `<a class="button secondary" id="${id}-download" download="${e(download.file)}" href="${e(dataUrl(value, download.type))}">Download ${e(download.file)}</a>` : "";
  return `
<h2>${e(label)}</h2>
<pre id="${id}">${e(value)}</pre>
<div class="controls"><button type="button" data-copy="${id}">Copy</button>${link}<span class="status" id="${id}-status" role="status"></span></div>`;
}

export function successPage(input: SuccessPageInput): Response {
  const c = input.credentials;
  const settings = serviceSettings(input);
  const installUrl = `${c.htmlUrl.replace(/\/+$/, "")}/installations/new`;
  const body = `
<h1>App created: ${e(c.name)}</h1>
<p class="warning"><strong>Save these values now.</strong> This page is shown once: the service keeps none of them, and the code
in this address can be exchanged only once. Anyone with the private key or the webhook secret can act as this App; anyone with
the client secret can make sessions that read decision records.</p>
<table>
<tr><th>App ID</th><td><code id="app-id">${c.id}</code></td></tr>
<tr><th>Slug</th><td><code id="app-slug">${e(c.slug)}</code></td></tr>
<tr><th>Owner</th><td><code id="app-owner">${e(c.ownerLogin ?? "")}</code></td></tr>
<tr><th>Client ID</th><td><code id="client-id">${e(c.clientId)}</code></td></tr>
</table>
${secretBlock("private-key", "Private key", c.pem, { file: "private-key.pem", type: "application/x-pem-file" })}
${secretBlock("webhook-secret", "Webhook secret", c.webhookSecret, { file: "webhook-secret", type: "text/plain" })}
${c.clientSecret === null ? "" : secretBlock("client-secret", "Client secret (people sign in with the forge to read decision records)", c.clientSecret, { file: "client-secret", type: "text/plain" })}
<h2>Run the service with this App</h2>
<p>Put the secrets in files readable only by the service's user (the file's final newline, if any, is ignored):</p>
<pre id="file-layout">${e(`${SECRETS_DIRECTORY}/          mode 0700, owned by the service user
├── private-key.pem               the private key above, mode 0400
${c.clientSecret === null ? "└── webhook-secret                the webhook secret above, mode 0400" : `├── webhook-secret                the webhook secret above, mode 0400
└── client-secret                 the client secret above, mode 0400`}`)}</pre>
<p>Then set these settings (keep your database and other settings as they are), and turn setup mode off:</p>
${secretBlock("service-settings", "Settings", settings, { file: "service.env", type: "text/plain" })}
<ol>
<li>Restart the service; <code>GET /health/ready</code> reports <code>"forge_credentials": true</code> once the App identity is confirmed.</li>
<li>Install the App on the organization's repositories: <a href="${e(installUrl)}" rel="noreferrer">${e(installUrl)}</a>.</li>
<li>Add the check <code>Service / approval</code> (or your <code>SERVICE_CHECK_NAME</code>) to the branch rules, with this App as the expected source.</li>
</ol>
`;
  return htmlResponse(200, page("App created · Code-owner approval", body, { script: true }), contentSecurityPolicy({ script: true }));
}

export function errorPage(status: number, title: string, message: string): Response {
  const body = `
<h1>${e(title)}</h1>
<p class="error" id="error-message">${e(message)}</p>
<p>Start again from <a href="/setup">the setup page</a>.</p>
`;
  return htmlResponse(status, page(`${title} · Code-owner approval`, body), contentSecurityPolicy());
}

export function completePage(): Response {
  const body = `
<h1>Finish the configuration</h1>
<p>Setup mode is on. After creating the App through <a href="/setup">the setup page</a>, configure the service with the
credentials it showed you:</p>
<pre id="settings">${e(`SERVICE_FORGE_APP_ID=<App ID>
SERVICE_FORGE_PRIVATE_KEY_FILE=${SECRETS_DIRECTORY}/private-key.pem
SERVICE_FORGE_WEBHOOK_SECRET_FILE=${SECRETS_DIRECTORY}/webhook-secret
SERVICE_SETUP_ENABLED=false`)}</pre>
<p>Then restart the service and check <code>GET /health/ready</code> for <code>"forge_credentials": true</code>. docs/getting-started.md
(in the service's source) has the whole path to a first check.</p>
`;
  return htmlResponse(200, page("Finish the configuration · Code-owner approval", body), contentSecurityPolicy());
}
