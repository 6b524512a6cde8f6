#!/usr/bin/env bun
/**
 * The open-pull-request index's shared-head lookup (issue 26 item 6): readIndexedOnHead (server/store/ops/open-pull-index.ts),
 * called as the service calls it (store.execute, one statement), on bun:sqlite and PostgreSQL, with 100,000 rows in the
 * index (target: under 1 ms a lookup) beside 1,000 rows (the baseline, same run).
 * - All rows are one repository's (the worst case for an index led by the repository); every 50th pull request shares its
 *   head with the one before it (a lookup then finds two). Filled the way a reconciler listing fills it (indexListingPage).
 * - Lookups: ROUNDS rounds of LOOKUPS timed lookups after WARMUP untimed ones, half on heads in the index (chosen with a
 *   seeded generator), half on heads not in it. Per round: median, p99, max; across rounds: the median of the round medians
 *   and the worst round's p99 (the machine is shared: the spread between rounds is reported).
 * - The query plan of the lookup at each size, to show it is answered from the (repository, head, number) index.
 * Prints JSON. PostgreSQL needs TEST_POSTGRES_URL (scripts/bench.sh starts a cluster); without it only bun:sqlite runs.
 */
import { all, type IndexedPull, indexListingPage, migrateDatabase, openStore, readIndexedOnHead, type Store } from "../../server/store/index.ts";
import { type BackendName, createTestDatabase } from "../support/databases.ts";
import { median, prng } from "./timing.ts";

const SIZES = (process.env.INDEX_BENCH_SIZES ?? "1000,100000").split(",").map(Number);
const ROUNDS = 5;
const LOOKUPS = 2_000;
const WARMUP = 200;
const TARGET_MS = 1;
const TARGET_ROWS = 100_000;
const REPOSITORY = { installationId: 7, repositoryId: 70 };
const FILL_PAGE = 1_000;

const hex = (n: number, salt: string) => new Bun.CryptoHasher("sha1").update(`${salt}${n}`).digest("hex");
/** Pull request n's head: its own, except every 50th shares the one before it. */
const headOf = (n: number) => hex(n % 50 === 0 ? n - 1 : n, "head-");

async function fill(store: Store, size: number): Promise<void> {
  const listing = { ...REPOSITORY, listingId: "bench-listing", startedAtMs: 1_000 };
  for (let start = 1; start <= size; start += FILL_PAGE) {
    const rows: IndexedPull[] = [];
    for (let n = start; n < start + FILL_PAGE && n <= size; n++) rows.push({ number: n, headSha: headOf(n), baseRef: "main" });
    await store.execute(() => indexListingPage(listing, rows, 2_000));
  }
}

async function plan(store: Store, backend: BackendName, head: string): Promise<string> {
  const sql = `select pull_number from open_pull_requests where repository_id = ${REPOSITORY.repositoryId} and head_sha = '${head}' and closed = false order by pull_number limit 1001`;
  const rows = await store.execute(() => all<Record<string, unknown>>(backend === "sqlite" ? `explain query plan ${sql}` : `explain ${sql}`));
  return rows.map((row) => String(row.detail ?? row["QUERY PLAN"] ?? JSON.stringify(row))).join(" | ");
}

const round3 = (ms: number) => Math.round(ms * 1000) / 1000;

async function measure(backend: BackendName, size: number) {
  const database = await createTestDatabase(backend);
  await migrateDatabase(database.target, Date.now());
  const store = openStore(database.target);
  try {
    const filled = performance.now();
    await fill(store, size);
    const fillSeconds = (performance.now() - filled) / 1000;
    const random = prng(size);
    const present = () => headOf(1 + Math.floor(random() * size));
    const absent = () => hex(Math.floor(random() * 1e9), "absent-");
    const lookup = async (head: string) => store.execute(() => readIndexedOnHead(REPOSITORY.repositoryId, head));
    // A sanity check the lookup is the real one: a shared head names both pull requests, an absent head none.
    const shared = await lookup(headOf(50));
    if (shared.join(",") !== "49,50" || (await lookup(absent())).length !== 0) throw new Error(`unexpected lookup result: ${shared}`);
    for (let i = 0; i < WARMUP; i++) await lookup(i % 2 === 0 ? present() : absent());
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) {
      const samples: number[] = [];
      for (let i = 0; i < LOOKUPS; i++) {
        const head = i % 2 === 0 ? present() : absent();
        const started = performance.now();
        await lookup(head);
        samples.push(performance.now() - started);
      }
      samples.sort((a, b) => a - b);
      rounds.push({ median_ms: round3(median(samples)), p99_ms: round3(samples[Math.ceil(samples.length * 0.99) - 1]!), max_ms: round3(samples.at(-1)!) });
    }
    return {
      rows: size, fill_seconds: +fillSeconds.toFixed(2),
      median_ms: round3(median(rounds.map((r) => r.median_ms))),
      p99_ms_median_of_rounds: round3(median(rounds.map((r) => r.p99_ms))),
      p99_ms_worst_round: Math.max(...rounds.map((r) => r.p99_ms)),
      round_medians_ms: rounds.map((r) => r.median_ms), rounds,
      plan: await plan(store, backend, headOf(50)),
    };
  } finally {
    await store.close();
    await database.drop();
  }
}

const backends: BackendName[] = process.env.TEST_POSTGRES_URL ? ["sqlite", "postgresql"] : ["sqlite"];
const results: Record<string, Awaited<ReturnType<typeof measure>>[]> = {};
const targets: Record<string, boolean> = {};
for (const backend of backends) {
  results[backend] = [];
  for (const size of SIZES) {
    console.error(`open-pull-index-bench: ${backend}, ${size} rows`);
    const r = await measure(backend, size);
    results[backend]!.push(r);
    if (size >= TARGET_ROWS) {
      const baseline = results[backend]!.find((b) => b.rows < size);
      targets[`${backend}: shared-head lookup at ${size} rows < ${TARGET_MS} ms (median ${r.median_ms} ms, p99 ${r.p99_ms_median_of_rounds} ms, worst round's p99 ${r.p99_ms_worst_round} ms${baseline ? `; at ${baseline.rows} rows: median ${baseline.median_ms} ms, p99 ${baseline.p99_ms_median_of_rounds} ms` : ""})`] =
        r.median_ms < TARGET_MS && r.p99_ms_median_of_rounds < TARGET_MS;
    }
  }
}
console.log(JSON.stringify({
  benchmark: "open-pull-request index: shared-head lookup (readIndexedOnHead through store.execute), one repository's rows",
  measured_by: `${ROUNDS} rounds of ${LOOKUPS} lookups after ${WARMUP} untimed, half on heads in the index, half on absent heads; median = median of the round medians; p99 per round`,
  ...(process.env.TEST_POSTGRES_URL ? {} : { skipped: "postgresql (no TEST_POSTGRES_URL: run scripts/bench.sh)" }),
  targets, results,
}, null, 2));
