/** Headers on the operator routes (DESIGN 3.6): never cached, never framed, never sniffed, no referrer. */
export const DEFENSIVE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "cache-control": "no-store, max-age=0",
  pragma: "no-cache",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
});

export function jsonResponse(body: unknown, status = 200, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...DEFENSIVE_HEADERS, ...extra },
  });
}
