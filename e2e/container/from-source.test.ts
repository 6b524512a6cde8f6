import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../support/binary.ts";
import { waitUntil } from "../support/service.ts";
import { importDebianBase } from "./base-image.ts";
import { Podman, podmanAvailability } from "./podman.ts";

/**
 * The Dockerfile's default path, from source: the build stage installs from bun.lock, builds the playground and compiles
 * with the revision. It needs the npm registry (`bun install`), so it runs only with TEST_CONTAINER_FROM_SOURCE=1, and
 * with a local stand-in for BUN_IMAGE: the local Debian base plus the pinned Bun that scripts/bootstrap.sh installed
 * (and the host's extra CA bundle, when NODE_EXTRA_CA_CERTS names one, so the build can reach the registry here).
 */
const wanted = process.env.TEST_CONTAINER_FROM_SOURCE === "1";
const availability = wanted ? podmanAvailability() : { ok: false as const, reason: "not requested" };
const skipReason = !wanted ? "set TEST_CONTAINER_FROM_SOURCE=1 (needs the npm registry)" : availability.ok ? null : availability.reason;
if (skipReason !== null) {
  console.log(`container from-source build skipped: ${skipReason}`);
  test.skip(`container image from source (skipped: ${skipReason})`, () => {});
}

const BUN = join(ROOT, ".tools", "node_modules", "bun", "bin", "bun.exe");
const IMAGE = "localhost/codeowner-approval-service:from-source";
const REVISION = "feedface".repeat(5);

if (skipReason === null) describe("container image from source", () => {
  let podman: Podman;
  let work: string;
  const measured: Record<string, number> = {};

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "svc-container-src-"));
    podman = Podman.create();
    const base = await importDebianBase(podman, process.env.TEST_CONTAINER_CACHE ?? join(tmpdir(), "svc-container-cache"));
    const bunContext = join(work, "bun");
    mkdirSync(bunContext);
    copyFileSync(BUN, join(bunContext, "bun"));
    const lines = [`FROM ${base.image}`, "COPY bun /usr/local/bin/bun", "RUN chmod 0755 /usr/local/bin/bun && ln -s bun /usr/local/bin/bunx"];
    const extraCa = process.env.NODE_EXTRA_CA_CERTS;
    if (extraCa) {
      copyFileSync(extraCa, join(bunContext, "extra-ca.pem"));
      lines.push("COPY extra-ca.pem /usr/local/share/extra-ca.pem", "ENV NODE_EXTRA_CA_CERTS=/usr/local/share/extra-ca.pem");
    }
    writeFileSync(join(bunContext, "Containerfile"), `${lines.join("\n")}\n`);
    await podman.must(["build", "--network=none", "--pull=never", "--tag", "localhost/bun:1.4.4", bunContext]);
    const started = performance.now();
    await podman.must([
      "build", "--network=host", "--pull=never", "--file", join(ROOT, "Dockerfile"),
      "--build-arg", "BUN_IMAGE=localhost/bun:1.4.4", "--build-arg", `BASE_IMAGE=${base.image}`,
      "--build-arg", `REVISION=${REVISION}`, "--build-arg", "VERSION=0.0.0-test", "--tag", IMAGE, ROOT,
    ], { timeoutMs: 600_000 });
    measured.from_source_build_ms = Math.round(performance.now() - started);
    measured.image_size_bytes = Number((await podman.must(["image", "inspect", "--format", "{{.Size}}", IMAGE])).stdout.trim());
  }, 900_000);

  afterAll(async () => {
    if (Object.keys(measured).length > 0) console.log(`container from-source measurements: ${JSON.stringify(measured)}`);
    await podman?.remove();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  test("the compiled image serves /api/runtime-identity with the revision given to the build", async () => {
    const [config] = JSON.parse((await podman.must(["image", "inspect", IMAGE])).stdout) as Array<{ Config: { User: string; Labels: Record<string, string> } }>;
    expect(config!.Config.User).toBe("65532:65532");
    expect(config!.Config.Labels["org.opencontainers.image.revision"]).toBe(REVISION);
    const data = join(work, "data");
    mkdirSync(data);
    chownSync(data, 65532, 65532);
    const port = 20000 + (process.pid % 20000);
    const run = (args: string[]) => [
      "run", "--network", "host", "--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL", "--pull", "never",
      "--volume", `${data}:/data`, "--env", "SERVICE_DATABASE_URL=sqlite:/data/service.db", "--env", "SERVICE_HOST=127.0.0.1",
      "--env", `SERVICE_PORT=${port}`, ...args,
    ];
    expect((await podman.run(run(["--rm", IMAGE, "database", "migrate"]))).exitCode).toBe(0);
    const name = `svc-src-${process.pid}`;
    await podman.must(run(["--detach", "--name", name, IMAGE]));
    try {
      let identity: Record<string, unknown> | null = null;
      await waitUntil(async () => {
        const response = await fetch(`http://127.0.0.1:${port}/api/runtime-identity`).catch(() => null);
        if (response?.status === 200) identity = await response.json() as Record<string, unknown>;
        return identity !== null;
      }, "the from-source image to serve", 30_000);
      expect(identity!).toMatchObject({ build_revision: REVISION, database_backend: "sqlite" });
      const playground = await fetch(`http://127.0.0.1:${port}/playground/`);
      expect(playground.status).toBe(200);
      expect(readFileSync(join(ROOT, "package.json"), "utf8")).toContain(`"version": "${identity!.application_version}"`);
    } finally {
      const stop = await podman.run(["stop", "--time", "15", name]);
      expect(stop.exitCode).toBe(0);
      await podman.run(["rm", "--force", name]);
    }
  }, 120_000);
});
