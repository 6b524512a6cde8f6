import { randomBytes, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { UserClient } from "../forge/user-client.ts";
import type { Logger } from "../observability/logger.ts";
import { contentSecurityPolicy, escapeHtml, page, setupHeaders } from "../setup/html.ts";
import { cookieValue, type DecisionsAccess, SESSION_COOKIE, SESSION_LIFETIME_MS, setCookie } from "./decisions-access.ts";

/**
 * Signing in with the forge to read decision records (the App's OAuth web flow):
 * - GET /auth/sign-in[?next=/decisions/…]: a fresh random state in a short-lived cookie (HttpOnly, Secure, SameSite=Lax),
 *   then to the forge's authorization page;
 * - GET /auth/callback?code&state: the state must equal the cookie's (one browser, one attempt, ten minutes); the code is
 *   exchanged for the person's user access token, GET /user names them, and the session cookie (decisions-access.ts) is set
 *   for 8 hours; then back to `next` (only a path under /decisions/, never another site);
 * - POST /auth/sign-out (from the service's own pages only; GET shows its button): the session cookie is cleared.
 * Without the App's client ID and secret configured these routes answer 404.
 */
const STATE_COOKIE = "__Host-decisions-sign-in";
const STATE_LIFETIME_SECONDS = 600;
const NEXT = /^\/decisions(\/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$/;

export type SignInOptions = {
  readonly access: DecisionsAccess;
  readonly users: UserClient | null;
  readonly log?: Logger;
  readonly now?: () => number;
};

function htmlPage(status: number, title: string, message: string, extra: Record<string, string> = {}): Response {
  const body = `<h1>${escapeHtml(title)}</h1>\n<p id="message">${escapeHtml(message)}</p>`;
  return new Response(page(title, body), { status, headers: { ...setupHeaders(contentSecurityPolicy()), ...extra } });
}

function redirect(location: string, cookies: readonly string[]): Response {
  const headers = new Headers({ location, "cache-control": "no-store", "referrer-policy": "no-referrer" });
  for (const cookie of cookies) headers.append("set-cookie", cookie);
  return new Response(null, { status: 303, headers });
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

export function signInRoutes(options: SignInOptions) {
  const { access, users } = options;
  const now = options.now ?? Date.now;
  const enabled = access.signInEnabled && users !== null && access.sessions !== null;
  const notFound = () => new Response(JSON.stringify({ error: "not_found" }), { status: 404, headers: { "content-type": "application/json; charset=utf-8" } });

  return new Elysia({ name: "sign-in" })
    .get("/auth/sign-in", ({ request }) => {
      if (!enabled) return notFound();
      const asked = new URL(request.url).searchParams.get("next") ?? "/decisions/";
      const next = NEXT.test(asked) && !asked.includes("//") ? asked : "/decisions/";
      const state = randomBytes(24).toString("base64url");
      return redirect(users!.authorizationUrl(state), [setCookie(STATE_COOKIE, `${state}.${next}`, STATE_LIFETIME_SECONDS)]);
    }, { detail: { hide: true } })
    .get("/auth/callback", async ({ request }) => {
      if (!enabled) return notFound();
      const query = new URL(request.url).searchParams;
      const code = query.get("code");
      const state = query.get("state");
      const kept = cookieValue(request, STATE_COOKIE);
      const dot = kept?.indexOf(".") ?? -1;
      const keptState = kept === null || dot < 0 ? null : kept.slice(0, dot);
      const clearState = setCookie(STATE_COOKIE, "", 0);
      // The forge sends the person back with an error instead of a code when they decline (or the App cannot be authorized).
      if (query.has("error") && code === null) {
        options.log?.info({ outcome: "declined" }, "sign-in refused");
        return htmlPage(400, "Sign-in not completed", "The sign-in was declined on the forge. Start again from the decisions page.", { "set-cookie": clearState });
      }
      if (code === null || state === null || keptState === null || !sameText(state, keptState) || code.length > 256) {
        options.log?.info({ outcome: "state_mismatch" }, "sign-in refused");
        return htmlPage(400, "Sign-in not completed", "This sign-in link is not this browser's, was used already or is older than ten minutes. Start again from the decisions page.", { "set-cookie": clearState });
      }
      // Checked again: the cookie came back from the browser.
      const keptNext = kept!.slice(dot + 1);
      const next = NEXT.test(keptNext) && !keptNext.includes("//") ? keptNext : "/decisions/";
      let person: { login: string; id: number; accessToken: string };
      try {
        const accessToken = await users!.exchangeCode(code);
        const user = await users!.user(accessToken);
        person = { ...user, accessToken };
      } catch {
        // The error may carry the request that held the client secret: only the outcome is logged.
        options.log?.warn({ outcome: "forge_refused" }, "sign-in refused");
        return htmlPage(502, "Sign-in not completed", "The forge did not confirm this sign-in (the code expired or was refused). Start again from the decisions page.", { "set-cookie": clearState });
      }
      options.log?.info({ login: person.login, outcome: "signed_in" }, "signed in to read decision records");
      return redirect(next, [clearState, setCookie(SESSION_COOKIE, access.sessions!.seal(person, now()), SESSION_LIFETIME_MS / 1000)]);
    }, { detail: { hide: true } })
    .get("/auth/sign-out", () => {
      if (!enabled) return notFound();
      // A page with the button: signing out is a POST, so that another site cannot sign a person out with a link or an image.
      const body = `<h1>Sign out</h1>\n<form method="post" action="/auth/sign-out"><button type="submit">Sign out of the decision records</button></form>`;
      return new Response(page("Sign out", body), { status: 200, headers: setupHeaders(contentSecurityPolicy({ formAction: "'self'" })) });
    }, { detail: { hide: true } })
    .post("/auth/sign-out", ({ request }) => {
      if (!enabled) return notFound();
      // Only from this service's own pages: a browser says where a form post comes from. Sec-Fetch-Site first; a browser
      // without it sends Origin ("null" under the pages' no-referrer policy, which proves nothing, so it is refused).
      const site = request.headers.get("sec-fetch-site");
      const origin = request.headers.get("origin");
      const host = request.headers.get("host");
      const sameHost = (text: string) => {
        try {
          return host !== null && new URL(text).host === host;
        } catch {
          return false;
        }
      };
      if (site !== null ? site !== "same-origin" : origin !== null && !sameHost(origin)) {
        return htmlPage(403, "Not signed out", "Signing out is done from the decisions page of this service.");
      }
      return htmlPage(200, "Signed out", "You are signed out of the decision records.", { "set-cookie": setCookie(SESSION_COOKIE, "", 0) });
    }, { detail: { hide: true } });
}
