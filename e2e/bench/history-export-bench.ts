#!/usr/bin/env bun
/**
 * Export cost of decision records (issue 28 item 6): `service history export` (the compiled binary, as an auditor runs it)
 * writes 1,000,000 records from PostgreSQL as JSON Lines to a pipe; the benchmark counts the lines and bytes, samples the
 * process's peak resident set (VmHWM in /proc/<pid>/status, target < 100 MiB) and reports the rate. Baseline, same run: the
 * same rows read raw (id and compressed body, no decoding) through a postgres.js cursor, the floor a reader of the table pays.
 * - Seeding is one INSERT … SELECT FROM generate_series per table: 950,000 decision records whose bodies are realistic
 *   compressed records (the record builder's output for a typical pull request: 50 files, 3 owner sets; 16 variants) and
 *   50,000 merge records, spread over 400 days, 20 repositories.
 * - HISTORY_EXPORT_RECORDS overrides the count (e.g. 100000 for a quick run).
 * Prints JSON. Needs TEST_POSTGRES_URL (scripts/bench.sh starts a throwaway cluster) and dist/service (npm run build).
 */
import { loadavg } from "node:os";
import postgres from "postgres";
import { encodeRecordBody } from "../../server/records/codec.ts";
import { migrateDatabase } from "../../server/store/index.ts";
import { BINARY, cleanEnv, ensureBinary } from "../support/binary.ts";
import { createTestDatabase } from "../support/databases.ts";
import { peakRss } from "./timing.ts";
import { typicalBody } from "./typical-record.ts";

const TOTAL = Number(process.env.HISTORY_EXPORT_RECORDS ?? 1_000_000);
const MERGES = Math.round(TOTAL / 20);
const DECISIONS = TOTAL - MERGES;
const VARIANTS = 16;
const RSS_TARGET_BYTES = 100 * 1024 * 1024;
const START_MS = Date.UTC(2025, 9, 1);
const SPAN_MS = 400 * 86_400_000;

async function seed(sql: postgres.Sql): Promise<{ seconds: number; stored_bytes_per_record: number }> {
  const started = performance.now();
  const bodies = Array.from({ length: VARIANTS }, (_, v) => encodeRecordBody(typicalBody(v, START_MS)));
  // One statement per variant: rows g ≡ v (mod VARIANTS) get variant v's body; ids follow g, times spread over SPAN_MS.
  for (let v = 0; v < VARIANTS; v++) {
    const { bytes, size } = bodies[v]!;
    await sql.unsafe(
      `insert into decision_records (id, installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest, pending_token,
         conclusion, break_glass, published_at_ms, confirmed_at_ms, body_bytes, body)
       select g, 4, 40 + g % 20, 'acme/repo-' || (g % 20), 1 + (g / 7) % 50000, md5(g::text) || substr(md5('h' || g), 1, 8), 1, 'digest-' || g, null,
         case when g % 9 = 0 then 'failure' else 'success' end, false, $1::bigint + (g::bigint * $2::bigint) / $3::bigint, $1::bigint + (g::bigint * $2::bigint) / $3::bigint + 500, $4, $5
       from generate_series(1, $3::bigint) g where g % ${VARIANTS} = ${v}`,
      [START_MS, SPAN_MS, DECISIONS, size, Buffer.from(bytes)],
    );
  }
  await sql.unsafe(`select setval(pg_get_serial_sequence('decision_records', 'id'), $1)`, [DECISIONS]);
  await sql.unsafe(
    `insert into merge_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, merge_commit_sha, merged_by_id, merged_by_login,
       merged_at_ms, decision_id, decision_conclusion, unapproved, break_glass, recovered, recorded_at_ms)
     select 4, 40 + g % 20, 'acme/repo-' || (g % 20), g, md5('m' || g) || substr(md5('n' || g), 1, 8), md5('c' || g) || substr(md5('d' || g), 1, 8), 12, 'carol',
       $1::bigint + (g::bigint * $2::bigint) / $3::bigint, g * 19, case when g % 25 = 0 then 'failure' else 'success' end, g % 25 = 0, false, false,
       $1::bigint + (g::bigint * $2::bigint) / $3::bigint + 900
     from generate_series(1, $3::bigint) g`,
    [START_MS, SPAN_MS, MERGES],
  );
  await sql.unsafe("analyze decision_records; analyze merge_records");
  const [row] = await sql.unsafe<{ avg: string }[]>("select avg(octet_length(body))::text as avg from decision_records");
  return { seconds: Math.round((performance.now() - started) / 10) / 100, stored_bytes_per_record: Math.round(Number(row!.avg)) };
}

/** The raw floor: every decision row's id and compressed body, through a cursor, not decoded. */
async function baseline(sql: postgres.Sql): Promise<{ rows: number; seconds: number; rows_per_second: number }> {
  const started = performance.now();
  let rows = 0;
  await sql`select id, body from decision_records order by published_at_ms, id`.cursor(1000, (batch) => { rows += batch.length; });
  await sql`select id, merge_commit_sha from merge_records order by recorded_at_ms, id`.cursor(1000, (batch) => { rows += batch.length; });
  const seconds = (performance.now() - started) / 1000;
  return { rows, seconds: Math.round(seconds * 100) / 100, rows_per_second: Math.round(rows / seconds) };
}

async function exportRun(url: string): Promise<Record<string, unknown>> {
  const started = performance.now();
  const proc = Bun.spawn([BINARY, "history", "export"], { cwd: "/", env: { ...cleanEnv(), SERVICE_DATABASE_URL: url, SERVICE_LOG_LEVEL: "warn" }, stdout: "pipe", stderr: "pipe" });
  let peak = 0;
  const sampler = setInterval(() => { peak = Math.max(peak, peakRss(proc.pid) ?? 0); }, 50);
  let lines = 0;
  let bytes = 0;
  let first: string | null = null;
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    for (let at = value.indexOf(10); at !== -1; at = value.indexOf(10, at + 1)) lines += 1;
    if (first === null) first = decoder.decode(value.subarray(0, Math.min(value.byteLength, 400)));
  }
  peak = Math.max(peak, peakRss(proc.pid) ?? 0);
  const [exitCode, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  // The machine is shared: the export's own CPU time says what it costs apart from waiting for a core.
  const cpu = proc.resourceUsage()?.cpuTime;
  const cpuSeconds = cpu === undefined ? null : Number(cpu.user + cpu.system) / 1e6;
  return {
    exit_code: exitCode, stderr: stderr.trim().split("\n").slice(-2), lines, megabytes: Math.round(bytes / 1048576), seconds: Math.round(seconds * 100) / 100,
    records_per_second: Math.round(lines / seconds), cpu_seconds: cpuSeconds === null ? null : Math.round(cpuSeconds * 100) / 100,
    records_per_cpu_second: cpuSeconds === null ? null : Math.round(lines / cpuSeconds), load_average: loadavg().map((l) => Math.round(l * 10) / 10), peak_rss_mib: Math.round((peak / 1048576) * 10) / 10, rss_target_mib: RSS_TARGET_BYTES / 1048576,
    within_rss_target: peak > 0 && peak < RSS_TARGET_BYTES, first_line_prefix: first?.slice(0, 120) ?? null,
  };
}

if (!process.env.TEST_POSTGRES_URL) {
  console.log(JSON.stringify({ skipped: "needs TEST_POSTGRES_URL (run scripts/bench.sh)" }));
  process.exit(0);
}
ensureBinary();
const database = await createTestDatabase("postgresql");
try {
  await migrateDatabase(database.target, Date.now());
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    const seeded = await seed(sql);
    const raw = await baseline(sql);
    const exported = await exportRun(database.url);
    console.log(JSON.stringify({ records: TOTAL, decisions: DECISIONS, merges: MERGES, seed: seeded, baseline_raw_cursor: raw, export: exported }, null, 2));
    if (exported.exit_code !== 0 || exported.lines !== TOTAL || exported.within_rss_target !== true) process.exitCode = 1;
  } finally {
    await sql.end();
  }
} finally {
  await database.drop();
}
