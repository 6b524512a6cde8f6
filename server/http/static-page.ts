import { DEFENSIVE_HEADERS } from "./defensive-headers.ts";

/**
 * A static page built by Vite and embedded in the executable (RECIPES 2), served under one prefix: the policy playground
 * (`/playground/`) and the decisions page (`/decisions/`). `index.html` is never cached; hashed assets (`assets/…`) are cached
 * for a year; an unknown path is a 404, never the page.
 */
export type StaticPage = {
  /** `/playground/`, with both slashes. */
  readonly prefix: string;
  readonly csp: string;
  /** Files by path relative to the prefix → file path on disk or in the executable. */
  readonly assets: ReadonlyMap<string, string>;
  /** Rewrites index.html before it is sent (values the page reads from its own markup); the file as built when absent. */
  readonly index?: (html: string) => string;
};

const IMMUTABLE = "public, max-age=31536000, immutable";

export const notFoundResponse = () =>
  new Response(JSON.stringify({ error: "not_found" }), { status: 404, headers: { "content-type": "application/json; charset=utf-8", ...DEFENSIVE_HEADERS } });

export async function serveStaticPage(page: StaticPage, pathname: string): Promise<Response> {
  // Elysia matches `/playground` and `/playground/` alike (strictPath false), so only the exact bare path redirects: no loop.
  if (pathname === page.prefix.slice(0, -1)) return new Response(null, { status: 308, headers: { location: page.prefix, ...DEFENSIVE_HEADERS } });
  if (!pathname.startsWith(page.prefix)) return notFoundResponse();
  const relative = pathname.slice(page.prefix.length) || "index.html";
  const file = page.assets.get(relative);
  if (file === undefined) return notFoundResponse();
  const body = Bun.file(file);
  const common = { "content-security-policy": page.csp, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "x-frame-options": "DENY" };
  if (relative === "index.html") {
    const html = page.index === undefined ? body : page.index(await body.text());
    return new Response(html, { headers: { ...DEFENSIVE_HEADERS, ...common, "content-type": "text/html; charset=utf-8" } });
  }
  const cache = relative.startsWith("assets/") ? IMMUTABLE : "no-cache";
  return new Response(body, { headers: { ...common, "content-type": body.type, "cache-control": cache } });
}
