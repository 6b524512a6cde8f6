// Vite build of the policy playground (issue 10). Output: web/dist, embedded in the executable by scripts/gen-embed.ts.
// Relative asset URLs (`base: "./"`) so the folder also works as plain static files under any path.
//
// The playground imports the pure decision core (server/policy, server/evaluation) directly. The `pure-core` plugin fails
// the build when anything it bundles from server/ reaches Bun, Node, the store, the forge or any server folder other than
// those two, or a package outside the small allowlist the core is known to need.
import { dirname, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const here = dirname(fileURLToPath(import.meta.url));
const serverDir = resolve(here, "..", "server");
const PURE_FOLDERS = ["policy", "evaluation"].map((folder) => resolve(serverDir, folder) + sep);
const CORE_PACKAGES = ["smol-toml", "@sinclair/typebox"];

export function pureCore(): Plugin {
  return {
    name: "pure-core",
    enforce: "pre",
    async resolveId(source, importer) {
      if (importer === undefined || !importer.startsWith(serverDir + sep)) return null;
      const from = relative(resolve(here, ".."), importer);
      if (!PURE_FOLDERS.some((folder) => importer.startsWith(folder))) {
        throw new Error(`the playground may import only server/policy and server/evaluation, not ${from}`);
      }
      if (/^(bun|node)(:|$)/.test(source) || /^(fs|path|os|crypto|child_process|net|tls|http|https|url|worker_threads|stream)(\/|$)/.test(source)) {
        throw new Error(`${from} imports ${source}: the decision core must stay browser-safe (no Bun or Node)`);
      }
      if (source.startsWith(".")) {
        const target = resolve(dirname(importer), source);
        if (!PURE_FOLDERS.some((folder) => target.startsWith(folder))) {
          throw new Error(`${from} imports ${source}: the decision core may not reach ${relative(resolve(here, ".."), target)}`);
        }
        return null;
      }
      if (!CORE_PACKAGES.some((name) => source === name || source.startsWith(`${name}/`))) {
        throw new Error(`${from} imports the package ${source}, which is not on the playground's allowlist (${CORE_PACKAGES.join(", ")})`);
      }
      return null;
    },
  };
}

export default defineConfig({
  root: here,
  // The build may run under `bun test` (NODE_ENV=test) or a developer's NODE_ENV: the embedded page is always the production
  // build of React (the development build is three times the size and logs warnings).
  mode: "production",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  oxc: { jsx: { runtime: "automatic", development: false } },
  base: "./",
  plugins: [pureCore()],
  worker: { format: "es" },
  build: {
    outDir: resolve(here, "dist"),
    emptyOutDir: true,
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    assetsInlineLimit: 0,
  },
});
