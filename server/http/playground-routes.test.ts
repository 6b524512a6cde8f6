import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PLAYGROUND_CSP, playgroundRoutes } from "./playground-routes.ts";

let dir: string;
let assets: Map<string, string>;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "playground-"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>playground</title>");
  writeFileSync(join(dir, "index-abc123.js"), "console.log(1)");
  writeFileSync(join(dir, "index-abc123.css"), "body{}");
  assets = new Map([
    ["index.html", join(dir, "index.html")],
    ["assets/index-abc123.js", join(dir, "index-abc123.js")],
    ["assets/index-abc123.css", join(dir, "index-abc123.css")],
  ]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const get = (app: ReturnType<typeof playgroundRoutes>, path: string) => app.handle(new Request(`http://localhost${path}`));

describe("playground routes", () => {
  test("the page is served with the strict content security policy and is never cached", async () => {
    const response = await get(playgroundRoutes({ enabled: true, assets }), "/playground/");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await response.text()).toContain("<title>playground</title>");
    const csp = response.headers.get("content-security-policy")!;
    expect(csp).toBe(PLAYGROUND_CSP);
    for (const directive of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'none'"]) expect(csp).toContain(directive);
    expect(csp).not.toContain("unsafe-inline");
    expect(response.headers.get("cache-control")).toBe("no-store, max-age=0");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
  });

  test("index.html by name is the same page", async () => {
    const response = await get(playgroundRoutes({ enabled: true, assets }), "/playground/index.html");
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store, max-age=0");
  });

  test("the bare path redirects once to the trailing slash (no loop)", async () => {
    const app = playgroundRoutes({ enabled: true, assets });
    const response = await get(app, "/playground");
    expect(response.status).toBe(308);
    expect(response.headers.get("location")).toBe("/playground/");
    expect((await get(app, "/playground/")).status).toBe(200);
  });

  test("hashed assets are cached for a year, with their content type and nosniff", async () => {
    const app = playgroundRoutes({ enabled: true, assets });
    const js = await get(app, "/playground/assets/index-abc123.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toStartWith("text/javascript");
    expect(js.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(js.headers.get("x-content-type-options")).toBe("nosniff");
    const css = await get(app, "/playground/assets/index-abc123.css");
    expect(css.headers.get("content-type")).toStartWith("text/css");
  });

  test("an unknown hashed asset is a 404, never the page", async () => {
    const response = await get(playgroundRoutes({ enabled: true, assets }), "/playground/assets/index-stale.js");
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain("<title>");
  });

  test("other unknown paths are 404 too (the page has no client-side routes)", async () => {
    expect((await get(playgroundRoutes({ enabled: true, assets }), "/playground/settings")).status).toBe(404);
    expect((await get(playgroundRoutes({ enabled: true, assets }), "/playground/../package.json")).status).toBe(404);
  });

  test("disabled, no playground route exists", async () => {
    const app = playgroundRoutes({ enabled: false, assets });
    for (const path of ["/playground", "/playground/", "/playground/assets/index-abc123.js"]) expect((await get(app, path)).status).toBe(404);
  });

  test("without a build the page is a 404 rather than an error", async () => {
    expect((await get(playgroundRoutes({ enabled: true, assets: new Map() }), "/playground/")).status).toBe(404);
  });
});

describe("OpenAPI document", () => {
  test("lists the playground page", async () => {
    const { docsRoutes } = await import("./docs-routes.ts");
    const doc = await (await docsRoutes("0.1.0").handle(new Request("http://localhost/api/openapi.json"))).json();
    expect(doc.paths["/playground/"].get.summary).toBe("Policy playground");
    expect(Object.keys(doc.paths).filter((path) => path.startsWith("/playground"))).toEqual(["/playground/"]);
  });
});
