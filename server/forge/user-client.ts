import { exchangeWebFlowCode, getWebFlowAuthorizationUrl } from "@octokit/oauth-methods";
import { request as octokitRequest } from "@octokit/request";
import { boundedText, FORGE_API_VERSION, PER_PAGE } from "./transport.ts";

/**
 * The forge as a signed-in person sees it: the App's OAuth web flow (@octokit/oauth-methods: the authorization URL and the
 * code's exchange for a user access token) and the person's own reads with that token (who they are, the App installations
 * they can reach and the repositories of each they can read). Separate from the App's transport (transport.ts): these
 * requests carry a person's token, not an installation's, and never spend the App's request budget.
 *
 * Every answer is bounded (10 s, 1 MiB a page) and the listings stop after MAX_PAGES pages each and MAX_INSTALLATIONS
 * installations: a person whose answer would be longer gets an error (fail closed), never a partial list.
 */
const TIMEOUT_MS = 10_000;
const MAX_PAGE_BYTES = 1024 * 1024;
const MAX_PAGES = 11;
const MAX_INSTALLATIONS = 100;

export class UserListingTooLong extends Error {
  override readonly name = "UserListingTooLong";
}

/** A fetch with a timeout whose answer's body is read to at most MAX_PAGE_BYTES. */
async function boundedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, { ...init, redirect: "error", signal: AbortSignal.timeout(TIMEOUT_MS) });
  const text = await boundedText(response, "user request", MAX_PAGE_BYTES);
  // The body is decoded text now: its transfer headers no longer describe it.
  const headers = new Headers(response.headers);
  headers.delete("content-encoding");
  headers.delete("content-length");
  return new Response(text, { status: response.status, statusText: response.statusText, headers });
}

export type ForgeUser = { readonly login: string; readonly id: number };

export interface UserClient {
  authorizationUrl(state: string): string;
  /** The user access token for a web-flow code (throws when the forge refuses it). */
  exchangeCode(code: string): Promise<string>;
  user(accessToken: string): Promise<ForgeUser>;
  /** The IDs of every repository the person can read in the App's installations they can reach. */
  readableRepositoryIds(accessToken: string): Promise<number[]>;
}

export function createUserClient(options: { readonly apiUrl: string; readonly clientId: string; readonly clientSecret: string }): UserClient {
  const request = octokitRequest.defaults({
    baseUrl: options.apiUrl.replace(/\/+$/, ""),
    headers: { "x-github-api-version": FORGE_API_VERSION, "user-agent": "code-owner-approval-service" },
    request: { fetch: boundedFetch },
  });
  const asUser = (accessToken: string) => request.defaults({ headers: { authorization: `token ${accessToken}` } });

  async function pages<T>(route: string, accessToken: string, params: Record<string, unknown>, itemsOf: (data: unknown) => T[]): Promise<T[]> {
    const items: T[] = [];
    for (let page = 1; ; page++) {
      if (page > MAX_PAGES) throw new UserListingTooLong(`${route}: more than ${MAX_PAGES} pages`);
      const response = await asUser(accessToken)(route, { ...params, per_page: PER_PAGE, page });
      const found = itemsOf(response.data);
      items.push(...found);
      if (found.length < PER_PAGE) return items;
    }
  }
  const list = (key: string) => (data: unknown): { id: unknown }[] => {
    const items = (data as Record<string, unknown> | null)?.[key];
    if (!Array.isArray(items)) throw new Error(`the forge's answer has no ${key} list`);
    return items as { id: unknown }[];
  };
  const idOf = (item: { id: unknown }): number => {
    if (!Number.isSafeInteger(item.id) || (item.id as number) < 1) throw new Error("the forge's answer has an item without a numeric id");
    return item.id as number;
  };

  return {
    authorizationUrl(state) {
      return getWebFlowAuthorizationUrl({ clientType: "github-app", clientId: options.clientId, state, request }).url;
    },
    async exchangeCode(code) {
      const { authentication } = await exchangeWebFlowCode({ clientType: "github-app", clientId: options.clientId, clientSecret: options.clientSecret, code, request });
      return authentication.token;
    },
    async user(accessToken) {
      const { data } = await asUser(accessToken)("GET /user");
      const { login, id } = data as { login?: unknown; id?: unknown };
      if (typeof login !== "string" || !/^[A-Za-z0-9-]{1,39}$/.test(login) || !Number.isSafeInteger(id)) throw new Error("the forge's answer for GET /user has no login and id");
      return { login, id: id as number };
    },
    async readableRepositoryIds(accessToken) {
      const installations = (await pages("GET /user/installations", accessToken, {}, list("installations"))).map(idOf);
      if (installations.length > MAX_INSTALLATIONS) throw new UserListingTooLong(`more than ${MAX_INSTALLATIONS} installations`);
      const ids: number[] = [];
      for (const installation of installations) {
        const repositories = await pages("GET /user/installations/{installation_id}/repositories", accessToken, { installation_id: installation }, list("repositories"));
        ids.push(...repositories.map(idOf));
      }
      return ids;
    },
  };
}
