#!/usr/bin/env bun
/**
 * Cost of tamper evidence at 1,000,000 records on PostgreSQL: the reconciler's checkpoint and `service history verify`.
 * - Seeding is one INSERT … SELECT FROM generate_series per table and body variant (not through the service): 950,000 final
 *   decision records with realistic compressed bodies (the record builder's output for a typical pull request, 16 variants)
 *   and 50,000 settled merge records, each with the digest the service's own statement computes (the same SQL, from
 *   server/store/ops/record-digest.ts), over 400 days and 20 repositories; none covered yet.
 * - checkpoint_backlog: one checkpoint covering all 1,000,000 (the first after an upgrade, or after a long stop), timed in a
 *   process of its own (e2e/bench/checkpoint-once.ts) whose peak resident set (VmHWM) is sampled.
 * - checkpoint_steady: 10,000 more records (a busy ten minutes), then one checkpoint on top of the 1,000,000 covered.
 * - verify: the compiled binary's `service history verify` over all of it: time, records a second (target ≥ 20,000), CPU
 *   seconds, peak resident set (target < 200 MiB).
 * - Baseline, same run: the same columns read raw (every covered record's fields and compressed body, no hashing) through a
 *   postgres.js cursor: the floor any reader of the tables pays.
 * VERIFY_BENCH_RECORDS overrides the count (e.g. 100000 for a quick run). Prints JSON. Needs TEST_POSTGRES_URL
 * (scripts/bench.sh starts a throwaway cluster) and dist/service (npm run build).
 */
import { join } from "node:path";
import { loadavg } from "node:os";
import postgres from "postgres";
import { encodeRecordBody } from "../../server/records/codec.ts";
import { RECORD_FIELDS } from "../../server/records/tamper-evidence.ts";
import { migrateDatabase } from "../../server/store/index.ts";
import { recordDigestSql } from "../../server/store/ops/record-digest.ts";
import { BINARY, cleanEnv, ensureBinary } from "../support/binary.ts";
import { createTestDatabase } from "../support/databases.ts";
import { peakRss } from "./timing.ts";
import { typicalBody } from "./typical-record.ts";

const TOTAL = Number(process.env.VERIFY_BENCH_RECORDS ?? 1_000_000);
const MERGES = Math.round(TOTAL / 20);
const DECISIONS = TOTAL - MERGES;
const STEADY = Math.min(10_000, Math.round(TOTAL / 100));
const VARIANTS = 16;
const RATE_TARGET = 20_000;
const RSS_TARGET_BYTES = 200 * 1024 * 1024;
const START_MS = Date.UTC(2025, 9, 1);
const SPAN_MS = 400 * 86_400_000;
/** The checkpoints' clock: after every seeded record, so none is dated before a checkpoint that missed it. */
const NOW_MS = START_MS + SPAN_MS + 86_400_000;

const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;
const mib = (bytes: number) => round(bytes / 1048576, 1);

/** Decision rows g = from..to: variant g mod VARIANTS's body, times spread over spanMs from startMs, confirmed, with their digests. */
async function seedDecisions(sql: postgres.Sql, from: number, to: number, startMs: number, spanMs: number): Promise<void> {
  const bodies = Array.from({ length: VARIANTS }, (_, v) => encodeRecordBody(typicalBody(v, START_MS)));
  const digest = recordDigestSql("decision", "postgresql", (column) => `v.${column}`);
  for (let v = 0; v < VARIANTS; v++) {
    const { bytes, size } = bodies[v]!;
    await sql.unsafe(
      `insert into decision_records (id, installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest, pending_token,
         conclusion, break_glass, published_at_ms, confirmed_at_ms, body_bytes, body, record_sha256)
       select v.id, v.installation_id, v.repository_id, v.repository_full_name, v.pull_number, v.head_sha, v.shared_generation, v.digest, null,
         v.conclusion, v.break_glass, v.published_at_ms, v.confirmed_at_ms, v.body_bytes, v.body, ${digest}
       from (select g as id, 4::bigint as installation_id, 40 + g % 20 as repository_id, 'acme/repo-' || (g % 20) as repository_full_name, (1 + (g / 7) % 50000)::integer as pull_number,
         md5(g::text) || substr(md5('h' || g), 1, 8) as head_sha, 1::bigint as shared_generation, 'digest-' || g as digest,
         case when g % 9 = 0 then 'failure' else 'success' end as conclusion, false as break_glass,
         $1::bigint + ((g - $6::bigint) * $2::bigint) / $3::bigint as published_at_ms, $1::bigint + ((g - $6::bigint) * $2::bigint) / $3::bigint + 500 as confirmed_at_ms,
         $4::integer as body_bytes, $5::bytea as body
         from generate_series($6::bigint, $7::bigint) g where g % ${VARIANTS} = ${v}) v`,
      [startMs, spanMs, to - from + 1, size, Buffer.from(bytes), from, to],
    );
  }
  await sql.unsafe(`select setval(pg_get_serial_sequence('decision_records', 'id'), $1)`, [to]);
}

/** Merge rows g = from..to, settled, with their digests. */
async function seedMerges(sql: postgres.Sql, from: number, to: number): Promise<void> {
  const digest = recordDigestSql("merge", "postgresql", (column) => `v.${column}`);
  const columns = Object.keys(RECORD_FIELDS.merge);
  await sql.unsafe(
    `insert into merge_records (id, ${columns.join(", ")}, record_sha256)
     select v.id, ${columns.map((c) => `v.${c}`).join(", ")}, ${digest}
     from (select g as id, 4::bigint as installation_id, (40 + g % 20)::bigint as repository_id, 'acme/repo-' || (g % 20) as repository_full_name, g::integer as pull_number,
       md5('m' || g) || substr(md5('n' || g), 1, 8) as head_sha, md5('c' || g) || substr(md5('d' || g), 1, 8) as merge_commit_sha, 12::bigint as merged_by_id, 'carol' as merged_by_login,
       $1::bigint + (g::bigint * $2::bigint) / $3::bigint as merged_at_ms, g * 19 as decision_id, case when g % 25 = 0 then 'failure' else 'success' end as decision_conclusion,
       g % 25 = 0 as unapproved, false as break_glass, false as recovered, $1::bigint + (g::bigint * $2::bigint) / $3::bigint + 900 as recorded_at_ms,
       null::bigint as reset_at_ms, md5('b' || g) || substr(md5('e' || g), 1, 8) as base_sha, 'enrolled' as enrollment,
       $1::bigint + (g::bigint * $2::bigint) / $3::bigint + 1900 as settled_at_ms
       from generate_series($4::bigint, $5::bigint) g) v`,
    [START_MS, SPAN_MS, to, from, to],
  );
  await sql.unsafe(`select setval(pg_get_serial_sequence('merge_records', 'id'), $1)`, [to]);
}

/** Runs a process to its end, sampling its peak resident set; answers its exit code, output, time and CPU time. */
async function measured(command: string[], env: Record<string, string>): Promise<{ exitCode: number; stdout: string; stderr: string; seconds: number; cpuSeconds: number | null; peakBytes: number }> {
  const started = performance.now();
  const proc = Bun.spawn(command, { cwd: "/", env: { ...cleanEnv(), ...env }, stdout: "pipe", stderr: "pipe" });
  let peak = 0;
  const sampler = setInterval(() => { peak = Math.max(peak, peakRss(proc.pid) ?? 0); }, 50);
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  const cpu = proc.resourceUsage()?.cpuTime;
  return { exitCode, stdout, stderr, seconds, cpuSeconds: cpu === undefined ? null : Number(cpu.user + cpu.system) / 1e6, peakBytes: peak };
}

async function checkpoint(url: string, now: number) {
  const run = await measured([process.execPath, join(import.meta.dir, "checkpoint-once.ts"), url, String(now)], {});
  const result = JSON.parse(run.stdout.trim() || "{}") as { kind?: string; count?: number; ms?: number };
  return {
    exit_code: run.exitCode, outcome: result.kind ?? null, records: result.count ?? 0, seconds: round((result.ms ?? 0) / 1000),
    records_per_second: result.ms ? Math.round((result.count ?? 0) / (result.ms / 1000)) : null, process_cpu_seconds: run.cpuSeconds === null ? null : round(run.cpuSeconds),
    peak_rss_mib: mib(run.peakBytes), stderr: run.stderr.trim().split("\n").slice(-3),
  };
}

/** The raw floor: every covered record's columns and body through a cursor, not hashed. */
async function baseline(sql: postgres.Sql): Promise<{ rows: number; seconds: number; rows_per_second: number }> {
  const started = performance.now();
  let rows = 0;
  const decisionColumns = Object.keys(RECORD_FIELDS.decision).join(", ");
  const mergeColumns = Object.keys(RECORD_FIELDS.merge).join(", ");
  await sql.unsafe(`select id, record_sha256, checkpoint_leaf, ${decisionColumns} from decision_records order by checkpoint_id, checkpoint_leaf`).cursor(1000, (batch) => { rows += batch.length; });
  await sql.unsafe(`select id, record_sha256, checkpoint_leaf, ${mergeColumns} from merge_records order by checkpoint_id, checkpoint_leaf`).cursor(1000, (batch) => { rows += batch.length; });
  const seconds = (performance.now() - started) / 1000;
  return { rows, seconds: round(seconds), rows_per_second: Math.round(rows / seconds) };
}

async function verify(url: string, expected: number) {
  const run = await measured([BINARY, "history", "verify"], { SERVICE_DATABASE_URL: url, SERVICE_LOG_LEVEL: "warn" });
  const covered = Number(/, (\d+) records covered/.exec(run.stdout)?.[1] ?? Number.NaN);
  return {
    exit_code: run.exitCode, stdout: run.stdout.trim().split("\n").map((line) => line.slice(0, 200)), progress_lines: run.stderr.trim().split("\n").filter(Boolean).length,
    records: covered, all_records_covered: covered === expected, seconds: round(run.seconds), records_per_second: Math.round(covered / run.seconds), rate_target: RATE_TARGET,
    within_rate_target: covered / run.seconds >= RATE_TARGET, cpu_seconds: run.cpuSeconds === null ? null : round(run.cpuSeconds),
    records_per_cpu_second: run.cpuSeconds === null ? null : Math.round(covered / run.cpuSeconds), load_average: loadavg().map((l) => round(l, 1)),
    peak_rss_mib: mib(run.peakBytes), rss_target_mib: RSS_TARGET_BYTES / 1048576, within_rss_target: run.peakBytes > 0 && run.peakBytes < RSS_TARGET_BYTES,
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
    let started = performance.now();
    await seedDecisions(sql, 1, DECISIONS, START_MS, SPAN_MS);
    await seedMerges(sql, 1, MERGES);
    await sql.unsafe("analyze decision_records; analyze merge_records");
    const [row] = await sql.unsafe<{ avg: string }[]>("select avg(octet_length(body))::text as avg from decision_records");
    const seed = { seconds: round((performance.now() - started) / 1000), stored_body_bytes_per_decision: Math.round(Number(row!.avg)) };

    const backlog = await checkpoint(database.url, NOW_MS);
    started = performance.now();
    await seedDecisions(sql, DECISIONS + 1, DECISIONS + STEADY, NOW_MS, 600_000);
    await sql.unsafe("analyze decision_records");
    const steadySeedSeconds = round((performance.now() - started) / 1000);
    const steady = await checkpoint(database.url, NOW_MS + 600_000);
    const raw = await baseline(sql);
    const verified = await verify(database.url, TOTAL + STEADY);
    console.log(JSON.stringify({
      records: TOTAL + STEADY, decisions: DECISIONS + STEADY, merges: MERGES, seed, checkpoint_backlog: backlog,
      checkpoint_steady: { ...steady, added_records: STEADY, seed_seconds: steadySeedSeconds }, baseline_raw_cursor: raw, verify: verified,
    }, null, 2));
    if (backlog.records !== TOTAL || steady.records !== STEADY || verified.exit_code !== 0 || !verified.all_records_covered) process.exitCode = 1;
  } finally {
    await sql.end();
  }
} finally {
  await database.drop();
}
