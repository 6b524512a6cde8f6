// Vite build of the decisions page (issue 28 item 5). Output: web/dist-decisions, embedded in the executable by
// scripts/gen-embed.ts and served at /decisions/ (server/http/decisions-routes.ts). Its sources are under web/src/decisions;
// it shares the playground's state codec (the "open in playground" link) and its pure-core guard.
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import { pureCore } from "../vite.config.ts";

const here = dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  mode: "production",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  oxc: { jsx: { runtime: "automatic", development: false } },
  base: "./",
  plugins: [pureCore()],
  build: {
    outDir: resolve(here, "..", "dist-decisions"),
    emptyOutDir: true,
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    assetsInlineLimit: 0,
  },
});
