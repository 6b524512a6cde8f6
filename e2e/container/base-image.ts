import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { debianMirror, type Podman } from "./podman.ts";

/**
 * The Debian base image made locally, since no registry is reachable here (RECIPES 12): `debootstrap --variant=minbase`
 * from the machine's own apt mirror (plus ca-certificates, so the Dockerfile's rootfs stage needs no network), trimmed,
 * tarred once into cacheDir and imported into the private podman store. ~30 s to make, ~4 s to import from the cache.
 */
export const BASE_IMAGE = "localhost/debian:bookworm-slim";

export async function importDebianBase(podman: Podman, cacheDir: string): Promise<{ image: string; cached: boolean; ms: number }> {
  const started = performance.now();
  mkdirSync(cacheDir, { recursive: true });
  const tarball = join(cacheDir, "debian-bookworm-minbase.tar");
  const cached = existsSync(tarball);
  if (!cached) {
    // Private names until the final rename: concurrent test runs may share the cache directory.
    const scratch = mkdtempSync(join(cacheDir, "debootstrap-"));
    const rootfs = join(scratch, "rootfs");
    const partial = join(scratch, "base.tar");
    try {
      await spawnChecked(["debootstrap", "--variant=minbase", "--include=ca-certificates", "bookworm", rootfs, debianMirror()], 240_000);
      for (const sub of ["var/cache/apt", "var/lib/apt/lists"]) {
        rmSync(join(rootfs, sub), { recursive: true, force: true });
        mkdirSync(join(rootfs, sub), { recursive: true });
      }
      await spawnChecked(["tar", "--numeric-owner", "-C", rootfs, "-cf", partial, "."], 120_000);
      renameSync(partial, tarball);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  await podman.must(["import", "--quiet", "-", BASE_IMAGE], { stdinFile: tarball });
  return { image: BASE_IMAGE, cached, ms: performance.now() - started };
}

async function spawnChecked(cmd: string[], timeoutMs: number): Promise<void> {
  const proc = Bun.spawn(cmd, { env: { ...process.env, PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin` }, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  if (exitCode !== 0) throw new Error(`${cmd[0]} exited ${exitCode}:\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`);
}
