#!/usr/bin/env bun
/**
 * One checkpoint of the decision and merge records, as the elected reconciler writes it, in a process of its own so that
 * e2e/bench/history-verify-bench.ts can sample its resident set: `bun e2e/bench/checkpoint-once.ts DATABASE_URL NOW_MS`.
 * Prints {"kind", "count", "ms"} as JSON.
 */
import { parseDatabaseUrl } from "../../server/config/index.ts";
import { acquireElectionLease, openStore, writeCheckpoint } from "../../server/store/index.ts";

const [url, nowText] = process.argv.slice(2);
if (url === undefined || nowText === undefined) {
  console.error("usage: bun e2e/bench/checkpoint-once.ts DATABASE_URL NOW_MS");
  process.exit(2);
}
const now = Number(nowText);
const lease = { name: "reconciler", owner: "checkpoint-bench", ttlMs: 3_600_000 };
const store = openStore(parseDatabaseUrl(url, false));
try {
  if (!(await store.execute(() => acquireElectionLease(lease, now)))) throw new Error("the reconciler lease is held elsewhere");
  const started = performance.now();
  const outcome = await store.execute(() => writeCheckpoint(lease, now));
  const ms = Math.round(performance.now() - started);
  console.log(JSON.stringify({ kind: outcome.kind, count: outcome.kind === "written" ? outcome.checkpoint.count : 0, ms }));
} finally {
  await store.close();
}
