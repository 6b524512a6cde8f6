// `service history`, `service history export` and `service history replay` (issue 28 items 3 and 4, DESIGN 3.10): the decision
// records and merge records in the store, for a person (the records of a pull request, or why a commit merged), for an
// auditor's pipe (JSON Lines, streamed), and replayed against today's evaluate(); `service history verify` recomputes their
// digests and checkpoints. They read the database through the history
// read operations (server/store/ops/history-ops.ts) and nothing else; replay also reads the recorded files from the forge by
// their blob SHAs, with the App's installation token.
import { readFileSync } from "node:fs";
import type { Config, DatabaseTarget } from "../config/index.ts";
import { evaluationSettingsOf } from "../config/index.ts";
import { type EvaluationSettings, visible, visibleJson } from "../evaluation/index.ts";
import { createForgeClient, ForgeError, type ForgeClient } from "../forge/index.ts";
import { createLogger } from "../observability/logger.ts";
import { decodeUtf8Strict } from "../policy/utf8.ts";
import { describeMergeGroupRecord, describeMergeRecord, describeRecord } from "../records/explain.ts";
import { exportHistory, OutputClosed, streamSink, type WritableLike } from "../records/export.ts";
import { type VerifyCounts, type VerifyOptions, type VerifyReport, verifyHistory } from "../records/history-verify.ts";
import { AttestationKeyError, type Envelope, loadVerificationKeys, type VerificationKey } from "../records/attestation.ts";
import { type AttestationReport, verifyAttestations } from "../records/attestation-verify.ts";
import { type BlobAnswer, type ReadBlob, replayRecord, replaySettings } from "../records/replay.ts";
import { type DecisionRecord, type HistoryFilter, type HistoryRecord, type MergeGroupRecord, type MergeRecord, RECORD_SCHEMA_VERSION, type RecordId } from "../records/schema.ts";
import { listHistory, openStore, parseRecordId, readHistoryBatch, readHistoryRecord, readMergeAttestations, type Store } from "../store/index.ts";
import { describe as describeStoreError } from "./database.ts";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type ExitCodes, exitCodesLine } from "./exit-codes.ts";
import { evidenceDocument } from "./explain.ts";

/** Exit code: no record matched (history), the output closed early (export), the record cannot be replayed (replay). */
export const EXIT_HISTORY_NONE = 3;
/** Exit code of replay: no such record, or the database could not be read. */
export const EXIT_REPLAY_NO_RECORD = 4;

export const HISTORY_EXIT_CODES: ExitCodes = [[0, "records printed"], [1, "the database could not be read"], [2, "usage or configuration error"], [3, "no record matches"]];
export const HISTORY_EXPORT_EXIT_CODES: ExitCodes = [[0, "every matching record written (none is not an error)"], [1, "the database could not be read"], [2, "usage or configuration error"], [3, "the output was closed before the end"]];
export const HISTORY_REPLAY_EXIT_CODES: ExitCodes = [
  [0, "today's evaluation reaches the recorded conclusion, owner sets and reasons"], [1, "it does not (the differences are printed)"],
  [2, "usage or configuration error"], [3, "cannot replay (summarised without inputs, a blob gone or not as recorded, the forge unreachable, a merge without a decision)"],
  [4, "no such record, or the database could not be read"],
];

const HISTORY_LIMIT_TEXT = "50";
export const HISTORY_USAGE = `usage: service history --repository OWNER/NAME [--pull N | --commit SHA] [--overrides] [--json]

Prints the decision records and merge records the service kept: with --pull, those of a pull request (the ${HISTORY_LIMIT_TEXT}
newest); with --commit, the record behind a merge commit or a head commit ("why did this commit merge?"): who merged it, whether
the service's success was current for its head, and who approved what, on which commit, under which CODEOWNERS.
--overrides keeps only the records with a break-glass override (the overridden decisions and their merges); alone, those of
the repository (the ${HISTORY_LIMIT_TEXT} newest). --json prints the records as JSON instead. Reads only the database settings.

${exitCodesLine(HISTORY_EXIT_CODES)}`;

export const HISTORY_EXPORT_USAGE = `usage: service history export [--since DATE] [--until DATE] [--repository OWNER/NAME] [--unapproved] [--overrides]

Writes every matching record as one line of JSON (JSON Lines), oldest first, streamed in batches (constant memory); each line
carries schema_version (docs/operations.md "Compliance evidence"). DATE is YYYY-MM-DD (UTC) or an ISO 8601 time with its
offset; --since is inclusive, --until exclusive. --unapproved keeps only unapproved merges, --overrides only the records with a
break-glass override (the overridden decisions and their merges). Reads only the database settings.

${exitCodesLine(HISTORY_EXPORT_EXIT_CODES)}`;

export const HISTORY_REPLAY_USAGE = `usage: service history replay ID [--json]

Gathers a decision record's inputs again by their SHAs (the files at the recorded blob SHAs, from the forge with the App's
credentials; reviews and directory facts as recorded), runs today's evaluation and says whether it reaches the recorded
conclusion, owner sets and reasons. ID is d<n> (a decision) or m<n> (a merge: its decision is replayed). --json prints the
evidence document the playground opens (as service explain --json does), with the replay's outcome.

${exitCodesLine(HISTORY_REPLAY_EXIT_CODES)}`;

export const HISTORY_VERIFY_EXIT_CODES: ExitCodes = [
  [0, "every record's digest and every checkpoint checks"], [1, "a record or checkpoint was changed, removed or inserted (the first is named)"],
  [2, "usage or configuration error"], [3, "the database could not be read"],
];

export const HISTORY_VERIFY_USAGE = `usage: service history verify [--since CHECKPOINT|DATE] [--attestations [--public-key FILE]]

Recomputes the digest of every decision and merge record and every checkpoint (the elected reconciler writes one at most
every 10 minutes when records were added: a Merkle root over the records it covers, linked to the checkpoint before it),
and names the first record or checkpoint that was changed, removed or inserted. --since starts at checkpoint CHECKPOINT (its
number), or at the first checkpoint written at or after DATE (YYYY-MM-DD or an ISO 8601 time with its offset), trusting its
link to the one before; the records no checkpoint covers yet are always checked. On success it prints the last checkpoint
and its hash: keep that hash outside the database and compare it next time (docs/security.md "Tamper evidence"). Reads in
pages (bounded memory), progress on stderr. Reads only the database settings. --attestations also checks every signature:
each signed checkpoint and each approved merge's statement, with the keys of FILE (PEM public keys, as
GET /api/attestations/public-key gives them) or of SERVICE_ATTESTATION_KEY_FILE and SERVICE_ATTESTATION_PUBLIC_KEYS_FILE.

${exitCodesLine(HISTORY_VERIFY_EXIT_CODES)}`;

/** Records `service history` shows at most (the newest); the export has them all. */
export const HISTORY_LIMIT = 50;
/** Records the export reads per batch (readHistoryBatch). */
export const EXPORT_BATCH = 200;
/** Bound on each forge request (as in `serve` and `explain`). */
const REQUEST_TIMEOUT_MS = 10_000;

export interface HistoryOutput {
  stdout(line: string): void;
  stderr(line: string): void;
}

export interface HistoryDeps {
  /** Injected in tests; by default the configured database. */
  readonly openStore?: (target: DatabaseTarget) => Store;
  /** Injected in tests; by default a client over the configured App credentials. */
  readonly forge?: Pick<ForgeClient, "readBlob">;
  /** Where the export writes (process.stdout by default). */
  readonly exportStream?: WritableLike;
  /** The clock (verify: the retention horizon, and how often progress is printed). */
  readonly now?: () => number;
}

/** `--flag value` or `--flag=value`; null for an unknown argument. */
function flagsOf(args: readonly string[], valued: readonly string[], bare: readonly string[]): { values: Map<string, string | null>; bare: Set<string>; positional: string[] } | string {
  const values = new Map<string, string | null>();
  const seen = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf("=");
    const [flag, inline] = arg.startsWith("--") && eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
    if (valued.includes(flag)) {
      if (values.has(flag)) return `${flag} given twice`;
      values.set(flag, inline ?? args[++i] ?? null);
    } else if (bare.includes(flag) && inline === undefined) seen.add(flag);
    else if (!arg.startsWith("-")) positional.push(arg);
    else return `unknown argument: ${arg}`;
  }
  return { values, bare: seen, positional };
}

const REPOSITORY = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;
const COMMIT = /^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;

interface HistoryArgs { repository: string; pull: number | null; commit: string | null; overrides: boolean; json: boolean }

export function parseHistoryArgs(args: readonly string[]): HistoryArgs | string {
  const flags = flagsOf(args, ["--repository", "--pull", "--commit"], ["--json", "--overrides"]);
  if (typeof flags === "string") return flags;
  if (flags.positional.length > 0) return `unknown argument: ${flags.positional[0]}`;
  const repository = flags.values.get("--repository") ?? null;
  if (repository === null || !REPOSITORY.test(repository)) return "--repository OWNER/NAME is required";
  const pull = flags.values.has("--pull") ? flags.values.get("--pull") ?? "" : null;
  const commit = flags.values.has("--commit") ? flags.values.get("--commit") ?? "" : null;
  if (pull !== null && commit !== null) return "give one of --pull N and --commit SHA, not both";
  const overrides = flags.bare.has("--overrides");
  if (pull === null && commit === null && !overrides) return "one of --pull N, --commit SHA or --overrides is required";
  if (pull !== null && !/^[1-9]\d{0,9}$/.test(pull)) return "--pull N must be a pull request number";
  if (commit !== null && !COMMIT.test(commit)) return "--commit must be a full commit SHA (40 or 64 hexadecimal digits)";
  return { repository, pull: pull === null ? null : Number(pull), commit: commit === null ? null : commit.toLowerCase(), overrides, json: flags.bare.has("--json") };
}

/** YYYY-MM-DD (midnight UTC) or an ISO 8601 time with seconds optional and an explicit offset; null otherwise. */
export function parseDate(text: string): number | null {
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (day !== null) {
    const ms = Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]));
    return new Date(ms).toISOString().slice(0, 10) === text ? ms : null;
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

export function parseExportArgs(args: readonly string[]): HistoryFilter | string {
  const flags = flagsOf(args, ["--since", "--until", "--repository"], ["--unapproved", "--overrides"]);
  if (typeof flags === "string") return flags;
  if (flags.positional.length > 0) return `unknown argument: ${flags.positional[0]}`;
  const filter: { -readonly [K in keyof HistoryFilter]: HistoryFilter[K] } = {};
  for (const [flag, key] of [["--since", "sinceMs"], ["--until", "untilMs"]] as const) {
    if (!flags.values.has(flag)) continue;
    const ms = parseDate(flags.values.get(flag) ?? "");
    if (ms === null) return `${flag} DATE must be YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)`;
    filter[key] = ms;
  }
  if (filter.sinceMs !== undefined && filter.untilMs !== undefined && filter.sinceMs >= filter.untilMs) return "--since must be before --until";
  if (flags.values.has("--repository")) {
    const repository = flags.values.get("--repository") ?? "";
    if (!REPOSITORY.test(repository)) return "--repository must be OWNER/NAME";
    filter.repository = repository;
  }
  if (flags.bare.has("--unapproved")) filter.unapproved = true;
  if (flags.bare.has("--overrides")) filter.overrides = true;
  return filter;
}

export function parseReplayArgs(args: readonly string[]): { id: RecordId; json: boolean } | string {
  const flags = flagsOf(args, [], ["--json"]);
  if (typeof flags === "string") return flags;
  if (flags.positional.length === 0) return "the record ID (d<n> or m<n>) is required";
  if (flags.positional.length > 1) return `unknown argument: ${flags.positional[1]}`;
  const id = flags.positional[0]!;
  if (parseRecordId(id) === null) return `${id} is not a record ID: d<n> for a decision, m<n> for a merge`;
  return { id: id as RecordId, json: flags.bare.has("--json") };
}

/** Every line through visible(): logins, paths and titles in a record may hold terminal escapes, bidi overrides or breaks. */
function printable(out: HistoryOutput): HistoryOutput {
  return { stdout: (line) => out.stdout(visible(line)), stderr: (line) => out.stderr(visible(line)) };
}

function usageError(out: HistoryOutput, message: string, usage: string): number {
  for (const line of [message, "", ...usage.split("\n")]) out.stderr(line);
  return EXIT_USAGE;
}

async function withStore<T>(config: Config, deps: HistoryDeps, use: (store: Store) => Promise<T>): Promise<T> {
  const store = (deps.openStore ?? openStore)(config.database);
  try {
    return await use(store);
  } finally {
    await store.close().catch(() => {});
  }
}

/** `service history --repository OWNER/NAME [--pull N | --commit SHA] [--overrides] [--json]`. */
export async function runHistory(args: readonly string[], config: Config, rawOut: HistoryOutput, deps: HistoryDeps = {}): Promise<number> {
  const out = printable(rawOut);
  const parsed = parseHistoryArgs(args);
  if (typeof parsed === "string") return usageError(out, parsed, HISTORY_USAGE);
  const where = parsed.pull !== null ? `${parsed.repository}#${parsed.pull}` : parsed.commit !== null ? `${parsed.repository} at ${parsed.commit}` : parsed.repository;
  let found: { records: HistoryRecord[]; related: Map<string, DecisionRecord | null>; groups: Map<string, MergeGroupRecord | null>; more: boolean };
  try {
    found = await withStore(config, deps, async (store) => {
      const filter: HistoryFilter = {
        repository: parsed.repository,
        ...(parsed.pull !== null ? { pull: parsed.pull } : {}),
        ...(parsed.commit !== null ? { commit: parsed.commit } : {}),
        ...(parsed.overrides ? { overrides: true } : {}),
      };
      const page = await store.execute(() => listHistory(filter, null, HISTORY_LIMIT));
      const records: HistoryRecord[] = [];
      for (const item of [...page.items].reverse()) {
        const record = await store.execute(() => readHistoryRecord(item.id));
        if (record !== null) records.push(record);
      }
      // Each merge's decision, read in full when asked by commit (the answer to "why did this commit merge?").
      // And the merge group that verified it, for a merge through the merge queue.
      const related = new Map<string, DecisionRecord | null>();
      const groups = new Map<string, MergeGroupRecord | null>();
      if (parsed.commit !== null) {
        for (const record of records) {
          if (record.kind !== "merge") continue;
          if (record.decision_id !== null && !related.has(record.decision_id)) {
            const decision = await store.execute(() => readHistoryRecord(record.decision_id!));
            related.set(record.decision_id, decision?.kind === "decision" ? decision : null);
          }
          const groupId = record.merge_group_id ?? null;
          if (groupId !== null && !groups.has(groupId)) {
            const group = await store.execute(() => readHistoryRecord(groupId));
            groups.set(groupId, group?.kind === "merge_group" ? group : null);
          }
        }
      }
      return { records, related, groups, more: page.next_cursor !== null };
    });
  } catch (error) {
    out.stderr(`cannot read the history of ${where}: ${describeStoreError(error)}`);
    return EXIT_FAILURE;
  }
  if (found.records.length === 0) {
    out.stderr(`no decision or merge record${parsed.overrides ? " with a break-glass override" : ""} of ${where} (records are kept for SERVICE_DECISION_RETENTION_DAYS)`);
    return EXIT_HISTORY_NONE;
  }
  if (parsed.json) {
    const shown = new Set(found.records.map((r) => r.id));
    const related = [...found.related.values(), ...found.groups.values()].filter((r): r is DecisionRecord | MergeGroupRecord => r !== null && !shown.has(r.id));
    rawOut.stdout(visibleJson(JSON.stringify({ schema_version: RECORD_SCHEMA_VERSION, records: [...found.records, ...related], more: found.more }, null, 2)));
    return EXIT_OK;
  }
  if (parsed.commit === null) {
    out.stdout(`${where}: ${found.records.length} records${parsed.overrides ? " with a break-glass override" : ""}, oldest first${found.more ? ` (the ${HISTORY_LIMIT} newest; service history export --repository ${parsed.repository}${parsed.overrides ? " --overrides" : ""} has them all)` : ""}`);
    for (const record of found.records) for (const line of ["", ...describeRecord(record, undefined)]) out.stdout(line);
    return EXIT_OK;
  }
  // By commit: the merges first (with the decision each names and the merge group that verified it), then the decisions
  // (a pull request's, or a merge group's on its group commit) on that head none of them showed.
  const merges = found.records.filter((r): r is MergeRecord => r.kind === "merge");
  const shown = new Set([...found.related.keys(), ...found.groups.keys()]);
  const decisions = found.records.filter((r): r is DecisionRecord | MergeGroupRecord => r.kind !== "merge" && !shown.has(r.id));
  out.stdout(merges.length === 0 ? `${where}: no merge recorded; the decisions on this head:` : `${where}:`);
  for (const merge of merges) {
    for (const line of ["", ...describeMergeRecord(merge, merge.decision_id === null ? null : found.related.get(merge.decision_id) ?? null)]) out.stdout(line);
    const groupId = merge.merge_group_id ?? null;
    if (groupId === null) continue;
    const group = found.groups.get(groupId) ?? null;
    if (group === null) out.stdout(`  the merge group ${groupId} is no longer kept (pruned after the retention period)`);
    else for (const line of describeMergeGroupRecord(group)) out.stdout(`  ${line}`);
  }
  if (merges.length > 0 && decisions.length > 0) out.stdout("\nother decisions on this head:");
  for (const decision of decisions) for (const line of ["", ...describeRecord(decision)]) out.stdout(line);
  return EXIT_OK;
}

/** `service history export [--since DATE] [--until DATE] [--repository OWNER/NAME] [--unapproved] [--overrides]`. */
export async function runHistoryExport(args: readonly string[], config: Config, rawOut: HistoryOutput, deps: HistoryDeps = {}): Promise<number> {
  const out = printable(rawOut);
  const filter = parseExportArgs(args);
  if (typeof filter === "string") return usageError(out, filter, HISTORY_EXPORT_USAGE);
  const sink = streamSink(deps.exportStream ?? (process.stdout as unknown as WritableLike));
  try {
    const count = await withStore(config, deps, (store) => exportHistory(async (after) => {
      // JavaScriptCore grows its heap lazily under a steady stream of short-lived allocations (decoded bodies, lines): a
      // full collection between batches keeps the resident set flat (a peak of about 85 MiB instead of 175 MiB for the
      // compiled binary, e2e/bench/history-export-bench.ts) for a few milliseconds a batch.
      if (after !== null) Bun.gc(true);
      const batch = await store.execute(() => readHistoryBatch(filter, after, EXPORT_BATCH));
      // An approved merge carries its signed statement (a DSSE envelope) when it has one: the export verifies offline.
      const mergeIds = batch.records.flatMap((record) => (record.kind === "merge" ? [Number(record.id.slice(1))] : []));
      const envelopes = mergeIds.length === 0 ? new Map<number, string>() : await store.execute(() => readMergeAttestations(mergeIds));
      if (envelopes.size === 0) return batch;
      return { ...batch, records: batch.records.map((record) => record.kind === "merge" && envelopes.has(Number(record.id.slice(1))) ? { ...record, attestation: envelopeOf(envelopes.get(Number(record.id.slice(1)))!) } : record) };
    }, sink));
    out.stderr(`exported ${count} records`);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof OutputClosed) {
      out.stderr(`export stopped: ${error.message}`);
      return EXIT_HISTORY_NONE;
    }
    out.stderr(`export failed: ${describeStoreError(error)}`);
    return EXIT_FAILURE;
  }
}

export type VerifyArgs = { since?: VerifyOptions["since"]; attestations?: boolean; publicKey?: string };

export function parseVerifyArgs(args: readonly string[]): VerifyArgs | string {
  const flags = flagsOf(args, ["--since", "--public-key"], ["--attestations"]);
  if (typeof flags === "string") return flags;
  if (flags.positional.length > 0) return `unknown argument: ${flags.positional[0]}`;
  const parsed: VerifyArgs = {};
  if (flags.bare.has("--attestations")) parsed.attestations = true;
  if (flags.values.has("--public-key")) {
    if (!parsed.attestations) return "--public-key goes with --attestations";
    parsed.publicKey = flags.values.get("--public-key") ?? "";
  }
  if (!flags.values.has("--since")) return parsed;
  const since = flags.values.get("--since") ?? "";
  if (/^[1-9]\d{0,15}$/.test(since) && Number.isSafeInteger(Number(since))) return { ...parsed, since: { checkpoint: Number(since) } };
  const ms = parseDate(since);
  if (ms === null) return "--since takes a checkpoint number, a date YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)";
  return { ...parsed, since: { atMs: ms } };
}

/** How often `history verify` says how far it got, on stderr. */
const VERIFY_PROGRESS_MS = 2_000;

/** A stored envelope as the export writes it: its JSON, or the stored text itself when it is not JSON (a verifier then names it). */
function envelopeOf(stored: string): Envelope | string {
  try {
    return JSON.parse(stored) as Envelope;
  } catch {
    return stored;
  }
}

/** `service history verify [--since CHECKPOINT|DATE]`. */
export async function runHistoryVerify(args: readonly string[], config: Config, rawOut: HistoryOutput, deps: HistoryDeps = {}): Promise<number> {
  const out = printable(rawOut);
  const parsed = parseVerifyArgs(args);
  if (typeof parsed === "string") return usageError(out, parsed, HISTORY_VERIFY_USAGE);
  // The keys to check signatures with: a public-key file given (an auditor's copy), else the service's own configured keys.
  let keys: readonly VerificationKey[] = [];
  if (parsed.attestations) {
    if (parsed.publicKey !== undefined) {
      try {
        keys = loadVerificationKeys(readFileSync(parsed.publicKey, "utf8"), "--public-key");
      } catch (error) {
        return usageError(out, error instanceof AttestationKeyError ? error.message : `--public-key: the file cannot be read`, HISTORY_VERIFY_USAGE);
      }
    } else if (config.attestation !== null) {
      keys = config.attestation.verifiers;
    } else {
      return usageError(out, "--attestations needs the public keys: --public-key FILE (GET /api/attestations/public-key gives them), or SERVICE_ATTESTATION_KEY_FILE", HISTORY_VERIFY_USAGE);
    }
  }
  const { attestations: _attestations, publicKey: _publicKey, ...walk } = parsed;
  const now = deps.now ?? Date.now;
  let said = now();
  const progress = (counts: Readonly<VerifyCounts>, checkpoint: { id: number } | null) => {
    if (now() - said < VERIFY_PROGRESS_MS) return;
    said = now();
    out.stderr(`verified ${counts.covered + counts.uncovered} records${checkpoint === null ? "" : ` (checkpoint ${checkpoint.id})`}`);
  };
  let report: VerifyReport;
  let signatures: AttestationReport | null = null;
  try {
    report = await withStore(config, deps, (store) => verifyHistory(store, {
      ...walk, nowMs: now(), retentionMs: config.decisionRetentionDays * 86_400_000, onProgress: progress,
    }));
    if (parsed.attestations && report.finding === null) signatures = await withStore(config, deps, (store) => verifyAttestations(store, keys));
  } catch (error) {
    out.stderr(`cannot verify the history: ${describeStoreError(error)}`);
    return EXIT_HISTORY_NONE;
  }
  const walked = report.first === null ? "no checkpoint" : report.first.id === report.last!.id ? `checkpoint ${report.first.id}` : `checkpoints ${report.first.id} to ${report.last!.id}`;
  const pruned = report.pruned > 0 ? ` (${report.pruned} past the retention: their records are pruned, their roots not recomputed)` : "";
  const counts = `${walked}${pruned}, ${report.covered} records covered, ${report.uncovered} not covered yet${report.withoutDigest > 0 ? `, ${report.withoutDigest} from before records had digests and never final` : ""}`;
  if (report.finding !== null) {
    out.stdout(`history verify: FAILED: ${report.finding.message}`);
    out.stdout(`checked before it: ${counts}`);
    return EXIT_FAILURE;
  }
  if (signatures !== null) {
    const signed = `${signatures.signedCheckpoints} checkpoint signatures, ${signatures.statements} merge statements${signatures.unsignedCheckpoints > 0 ? ` (${signatures.unsignedCheckpoints} earlier checkpoints written without a signing key)` : ""}`;
    if (signatures.finding !== null) {
      out.stdout(`history verify: FAILED: ${signatures.finding}`);
      out.stdout(`checked before it: ${counts}; ${signed}`);
      return EXIT_FAILURE;
    }
    out.stdout(`attestations verified: ${signed}, with key${keys.length === 1 ? "" : "s"} ${keys.map((k) => k.keyId.slice(0, 16)).join(", ")}`);
  }
  out.stdout(`history verified: ${counts}`);
  const last = report.last;
  out.stdout(last === null
    ? "no checkpoint yet: the elected reconciler writes the first within 10 minutes of the first records"
    : `last checkpoint: ${last.id}, written ${new Date(last.createdAtMs).toISOString()}, covering ${last.count} records, hash ${last.hash}`);
  return EXIT_OK;
}

/** The forge's answer for a recorded blob, as replay needs it: strict UTF-8 text (the service's own decoding), or why not. */
export function blobReader(forge: Pick<ForgeClient, "readBlob">, installationId: number): ReadBlob {
  return async (at): Promise<BlobAnswer> => {
    try {
      const read = await forge.readBlob({ installationId, owner: at.owner, repo: at.repo, sha: at.blobSha }, at.maxBytes);
      if (read.kind === "missing") return { kind: "gone" };
      if (read.kind === "too_large") return { kind: "not_as_recorded", detail: `it is over the ${at.maxBytes}-byte bound of its kind` };
      if (read.kind === "mismatch") return { kind: "not_as_recorded", detail: "the bytes the forge answered do not hash to that SHA" };
      const text = decodeUtf8Strict(read.bytes);
      if (text === null) return { kind: "not_as_recorded", detail: "it is not valid UTF-8" };
      return { kind: "found", text, bytes: read.bytes.length };
    } catch (error) {
      // Only the kind: forge errors never carry credentials, but print nothing of the request to be sure (DESIGN 5).
      return { kind: "unavailable", detail: `the forge request failed (${error instanceof ForgeError ? error.kind : "unexpected"})` };
    }
  };
}

/** `service history replay ID [--json]`. */
export async function runHistoryReplay(args: readonly string[], config: Config, rawOut: HistoryOutput, deps: HistoryDeps = {}): Promise<number> {
  const out = printable(rawOut);
  const parsed = parseReplayArgs(args);
  if (typeof parsed === "string") return usageError(out, parsed, HISTORY_REPLAY_USAGE);
  let forge = deps.forge;
  if (forge === undefined) {
    if (config.forge.appId === null || config.forge.privateKey === null) {
      out.stderr("replay needs the App credentials: set SERVICE_FORGE_APP_ID and the App private key (see docs/operations.md, Settings)");
      return EXIT_USAGE;
    }
    forge = createForgeClient({ apiUrl: config.forge.apiUrl, appId: config.forge.appId, privateKey: config.forge.privateKey, requestTimeoutMs: REQUEST_TIMEOUT_MS, checkName: config.checkName, logger: createLogger("silent") });
  }
  let read: { record: HistoryRecord | null; decision: DecisionRecord | null };
  try {
    read = await withStore(config, deps, async (store) => {
      const record = await store.execute(() => readHistoryRecord(parsed.id));
      if (record?.kind !== "merge" || record.decision_id === null) return { record, decision: record?.kind === "decision" ? record : null };
      const decision = await store.execute(() => readHistoryRecord(record.decision_id!));
      return { record, decision: decision?.kind === "decision" ? decision : null };
    });
  } catch (error) {
    out.stderr(`cannot read ${parsed.id}: ${describeStoreError(error)}`);
    return EXIT_REPLAY_NO_RECORD;
  }
  if (read.record === null) {
    out.stderr(`no record ${parsed.id} (never written, or pruned after SERVICE_DECISION_RETENTION_DAYS)`);
    return EXIT_REPLAY_NO_RECORD;
  }
  const record = read.decision;
  if (read.record.kind === "merge_group") {
    const decided = read.record.members.flatMap((member) => (member.decision_id === null ? [] : [member.decision_id]));
    out.stderr(`cannot replay ${parsed.id}: it is a merge group's record; its pull requests' own decisions are replayed${decided.length === 0 ? "" : ` (${decided.join(", ")})`}`);
    return EXIT_HISTORY_NONE;
  }
  if (record === null) {
    const merge = read.record.kind === "merge" ? read.record : null;
    out.stderr(`cannot replay ${parsed.id}: ${merge?.decision_id == null ? "the merge names no decision of the service (nothing was decided for its head)" : `its decision ${merge.decision_id} is no longer kept`}`);
    return EXIT_HISTORY_NONE;
  }
  const settings = evaluationSettingsOf(config);
  const outcome = await replayRecord(record, settings, blobReader(forge, record.installation_id));
  const what = `${record.id}${read.record.id === record.id ? "" : ` (the decision behind ${read.record.id})`} on ${record.repository.full_name}#${record.pull_request} at ${record.head_sha}`;
  if (outcome.kind === "cannot_replay") {
    out.stderr(`cannot replay ${what}: ${outcome.why}`);
    return EXIT_HISTORY_NONE;
  }
  const differences = outcome.kind === "different" ? outcome.differences : [];
  if (parsed.json) {
    const document = { ...evidenceDocument(outcome.evidence, replaySettings(record, settings), outcome.decision, "service history replay"), replay: { record: record.id, outcome: outcome.kind, differences } };
    rawOut.stdout(visibleJson(JSON.stringify(document, null, 2)));
  } else if (outcome.kind === "same") {
    out.stdout(`replay of ${what}: same: today's evaluation reaches the recorded ${record.conclusion}, its ${record.owner_sets.length} owner sets and its reasons`);
  } else {
    out.stdout(`replay of ${what}: DIFFERENT from the record:`);
    for (const difference of differences) out.stdout(`  ${difference}`);
  }
  return outcome.kind === "same" ? EXIT_OK : EXIT_FAILURE;
}
