// App-manifest conversion (setup flow, spec "Setup routes"): exchanges a one-use code for the new App's credentials. No App
// credentials exist yet, so this is unauthenticated. The result holds secrets (private key, webhook and client secrets): the
// caller shows it once and never logs or stores it; nothing here logs it either.
import { Octokit } from "@octokit/core";
import { classifyForgeError, ForgeError } from "./errors.ts";
import { FORGE_API_VERSION } from "./transport.ts";

export interface ManifestConversionOptions {
  apiUrl: string;
  requestTimeoutMs: number;
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface AppCredentials {
  id: number;
  slug: string;
  name: string;
  htmlUrl: string;
  ownerLogin: string | null;
  /** The owner account's type as the forge names it ("Organization", "User"); null when the answer has none. */
  ownerType: string | null;
  clientId: string;
  /** The OAuth client secret, when the forge sent one: people sign in with it (the App's OAuth web flow) to read decision records. */
  clientSecret: string | null;
  webhookSecret: string;
  /** The App private key, PEM. */
  pem: string;
}

const ROUTE = "POST /app-manifests/{code}/conversions";

/** Throws ForgeError: not_found when the code is unknown or already used; permanent when the answer lacks a credential. */
export async function convertAppManifest(options: ManifestConversionOptions, code: string): Promise<AppCredentials> {
  const baseFetch = options.fetch ?? globalThis.fetch;
  const octokit = new Octokit({
    baseUrl: options.apiUrl.replace(/\/+$/, ""),
    userAgent: options.userAgent ?? "codeowner-approval-service",
    log: { debug() {}, info() {}, warn() {}, error() {} },
    request: {
      fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
        const headers = new Headers(init?.headers);
        headers.set("x-github-api-version", FORGE_API_VERSION);
        return baseFetch(input, { ...init, headers, signal: AbortSignal.timeout(options.requestTimeoutMs) });
      }) as typeof fetch,
    },
  });
  let data: unknown;
  try {
    data = (await octokit.request(ROUTE, { code })).data;
  } catch (error) {
    throw classifyForgeError(error, ROUTE);
  }
  const o = (typeof data === "object" && data !== null ? data : {}) as Record<string, unknown>;
  const text = (key: string) => {
    const v = o[key];
    if (typeof v !== "string" || v === "") throw new ForgeError("permanent", `${ROUTE}: the credential response is incomplete (${key})`);
    return v;
  };
  if (typeof o.id !== "number" || !Number.isSafeInteger(o.id) || o.id <= 0) throw new ForgeError("permanent", `${ROUTE}: the credential response is incomplete (id)`);
  const owner = (typeof o.owner === "object" && o.owner !== null ? o.owner : {}) as Record<string, unknown>;
  const ownerText = (key: string) => { const v = owner[key]; return typeof v === "string" ? v : null; };
  return {
    id: o.id, slug: text("slug"), name: text("name"), htmlUrl: text("html_url"), ownerLogin: ownerText("login"), ownerType: ownerText("type"),
    clientId: text("client_id"), clientSecret: typeof o.client_secret === "string" && o.client_secret !== "" ? o.client_secret : null, webhookSecret: text("webhook_secret"), pem: text("pem"),
  };
}
