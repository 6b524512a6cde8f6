/**
 * Signs a person in to the service's decision records through the forge simulator's OAuth web flow, as a browser would
 * (the service's /auth/sign-in, the simulator's sign-in page and its "Sign in as" button, the service's /auth/callback), and
 * answers the session cookie (`__Host-decisions-session=…`) to send with reads. Works under Bun and Node (fetch only).
 */
export async function signInAs(serviceUrl: string, login: string): Promise<string> {
  const start = await fetch(`${serviceUrl}/auth/sign-in`, { redirect: "manual" });
  if (start.status !== 303) throw new Error(`GET /auth/sign-in answered ${start.status}`);
  const stateCookie = start.headers.get("set-cookie")!.split(";")[0]!;
  const authorize = new URL(start.headers.get("location")!);
  const html = await (await fetch(authorize)).text();
  const hidden = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!.replaceAll("&amp;", "&")]));
  const confirmed = await fetch(new URL("/login/oauth/authorize", authorize), { method: "POST", body: new URLSearchParams({ ...hidden, login }), redirect: "manual" });
  if (confirmed.status !== 302) throw new Error(`the simulator's sign-in answered ${confirmed.status}`);
  const callback = await fetch(confirmed.headers.get("location")!, { headers: { cookie: stateCookie }, redirect: "manual" });
  const session = callback.headers.getSetCookie().find((cookie) => cookie.startsWith("__Host-decisions-session=v1."));
  if (callback.status !== 303 || session === undefined) throw new Error(`GET /auth/callback answered ${callback.status} without a session`);
  return session.split(";")[0]!;
}
