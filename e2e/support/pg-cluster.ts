import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./binary.ts";

/**
 * A PostgreSQL cluster of a test's own (scripts/pg-cluster.sh), for a test that stops and starts the server: the suite's
 * shared cluster must stay up for every other test.
 */
export type OwnCluster = {
  /** Admin URL of the cluster's `postgres` database (createTestDatabase's postgresUrl). */
  readonly url: string;
  /** Stops the server with a fast shutdown (every session is ended), keeping the cluster (nothing when it is stopped). */
  down(): void;
  /** Starts the stopped server again on the same port (nothing when it runs). */
  up(): void;
  /** Stops the server and removes the cluster. */
  destroy(): void;
};

function script(...args: string[]): string {
  const result = Bun.spawnSync(["bash", join(ROOT, "scripts", "pg-cluster.sh"), ...args], { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`pg-cluster.sh ${args[0]} failed: ${result.stderr.toString()}`);
  return result.stdout.toString();
}

export function startOwnCluster(): OwnCluster {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-own-pg-")), "pg");
  const url = script("start", dir).match(/TEST_POSTGRES_URL=(\S+)/)?.[1];
  if (!url) throw new Error("pg-cluster.sh start printed no TEST_POSTGRES_URL");
  let running = true;
  return {
    url,
    down() {
      if (running) script("down", dir);
      running = false;
    },
    up() {
      if (!running) script("up", dir);
      running = true;
    },
    destroy() {
      script("stop", dir);
      rmSync(join(dir, ".."), { recursive: true, force: true });
    },
  };
}
