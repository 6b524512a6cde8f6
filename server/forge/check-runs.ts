// The managed check run, always bound to one exact head: found by our App ID and configured name only, created or reset to
// in_progress, completed with a conclusion and output. Every forge answer is checked for that head and our App before use.
import { ForgeError } from "./errors.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { int, object, optStr, sha, str, type Json } from "./validate.ts";

const LIST = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs";
const CREATE = "POST /repos/{owner}/{repo}/check-runs";
const UPDATE = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}";

export interface CheckTarget { installationId: number; owner: string; repo: string; headSha: string }
export interface CheckOutput { title: string; summary: string; text?: string }
export interface ManagedCheck { id: number; headSha: string; status: string; conclusion: string | null }
export type CheckConclusion = "success" | "failure";

function toManagedCheck(value: unknown, what: string): ManagedCheck & { appId: number | null; name: string } {
  const run = object(value, what);
  const app = run.app === null || run.app === undefined ? null : object(run.app, what);
  return {
    id: int(run, "id", what), headSha: sha(run, "head_sha", what), status: str(run, "status", what), conclusion: optStr(run, "conclusion", what),
    appId: app ? int(app, "id", what) : null, name: str(run, "name", what),
  };
}

function bound(value: unknown, what: string, t: Transport, checkName: string, headSha: string): ManagedCheck {
  const run = toManagedCheck(value, what);
  if (run.headSha !== headSha || run.appId !== t.appId || run.name !== checkName) {
    throw new ForgeError("permanent", `${what}: the forge answered with a check run of another head, App or name`);
  }
  return { id: run.id, headSha: run.headSha, status: run.status, conclusion: run.conclusion };
}

/** Our managed check on exactly this head (newest if the forge lists several), or null. */
export async function findManagedCheck(t: Transport, checkName: string, target: CheckTarget, call?: CallOptions): Promise<ManagedCheck | null> {
  const response = await t.installation(target.installationId, LIST, {
    owner: target.owner, repo: target.repo, ref: target.headSha, check_name: checkName, app_id: t.appId, filter: "latest", per_page: 100,
  }, call);
  const body = object(response.data, LIST);
  const runs = body.check_runs;
  if (!Array.isArray(runs)) throw new ForgeError("transient", `${LIST}: the forge sent a truncated or malformed body`);
  // One page holds every run this query can match (filter=latest by our name and App: one per check suite). A further page
  // could hide our check, and a second managed check would then be created beside it: refuse (the job retries).
  if (/rel="next"/.test(String(response.headers.link ?? "")) || (typeof body.total_count === "number" && body.total_count > runs.length)) {
    throw new ForgeError("transient", `${LIST}: the forge lists more check runs than one page holds`);
  }
  let found: ManagedCheck | null = null;
  for (const value of runs) {
    const run = toManagedCheck(value, LIST);
    // The query filters by name and App already; anything else the forge returns is ignored, never adopted.
    if (run.headSha !== target.headSha || run.appId !== t.appId || run.name !== checkName) continue;
    if (!found || run.id > found.id) found = { id: run.id, headSha: run.headSha, status: run.status, conclusion: run.conclusion };
  }
  return found;
}

export async function createInProgressCheck(t: Transport, checkName: string, target: CheckTarget, output: CheckOutput, call?: CallOptions): Promise<ManagedCheck> {
  const response = await t.installation(target.installationId, CREATE, {
    owner: target.owner, repo: target.repo, name: checkName, head_sha: target.headSha, status: "in_progress", output: outputBody(output),
  }, call);
  return bound(response.data, CREATE, t, checkName, target.headSha);
}

/**
 * Creates the managed check already completed, in one write: for work that has its conclusion before any check exists (a
 * merge group's verdict), where creating it in progress first would cost a second write for nothing to see.
 */
export async function createCompletedCheck(
  t: Transport, checkName: string, target: CheckTarget, conclusion: CheckConclusion, output: CheckOutput, completedAt: Date, call?: CallOptions,
): Promise<ManagedCheck> {
  const response = await t.installation(target.installationId, CREATE, {
    owner: target.owner, repo: target.repo, name: checkName, head_sha: target.headSha, status: "completed", conclusion,
    completed_at: completedAt.toISOString(), output: outputBody(output),
  }, call);
  const run = bound(response.data, CREATE, t, checkName, target.headSha);
  if (run.status !== "completed" || run.conclusion !== conclusion) throw new ForgeError("permanent", `${CREATE}: the forge did not record the conclusion`);
  return run;
}

/** A check run's head never changes, so a ManagedCheck found or created for a head is that head's handle; refuse any other. */
function assertSameHead(check: ManagedCheck, target: CheckTarget): void {
  if (check.headSha !== target.headSha) throw new ForgeError("permanent", `${UPDATE}: refusing to write a check run of another head`);
}

export async function setCheckInProgress(t: Transport, checkName: string, target: CheckTarget, check: ManagedCheck, output: CheckOutput, call?: CallOptions): Promise<ManagedCheck> {
  assertSameHead(check, target);
  const response = await t.installation(target.installationId, UPDATE, {
    owner: target.owner, repo: target.repo, check_run_id: check.id, status: "in_progress", output: outputBody(output),
  }, call);
  return bound(response.data, UPDATE, t, checkName, target.headSha);
}

export async function completeCheck(
  t: Transport, checkName: string, target: CheckTarget, check: ManagedCheck, conclusion: CheckConclusion, output: CheckOutput, completedAt: Date, call?: CallOptions,
): Promise<ManagedCheck> {
  assertSameHead(check, target);
  const response = await t.installation(target.installationId, UPDATE, {
    owner: target.owner, repo: target.repo, check_run_id: check.id, status: "completed", conclusion,
    completed_at: completedAt.toISOString(), output: outputBody(output),
  }, call);
  const run = bound(response.data, UPDATE, t, checkName, target.headSha);
  if (run.status !== "completed" || run.conclusion !== conclusion) throw new ForgeError("permanent", `${UPDATE}: the forge did not record the conclusion`);
  return run;
}

/** A write by ID that the forge answered with 404 or 410: that check run no longer exists (nothing was written). */
export function isCheckGone(error: unknown): boolean {
  return error instanceof ForgeError && (error.kind === "not_found" || error.status === 410);
}

/** Resets the existing managed check on the head to in_progress, or creates one; returns it. */
export async function ensureCheckInProgress(t: Transport, checkName: string, target: CheckTarget, output: CheckOutput, call?: CallOptions): Promise<ManagedCheck> {
  const existing = await findManagedCheck(t, checkName, target, call);
  if (existing) return setCheckInProgress(t, checkName, target, existing, output, call);
  return createInProgressCheck(t, checkName, target, output, call);
}

function outputBody(output: CheckOutput): Json {
  return { title: output.title, summary: output.summary, ...(output.text !== undefined ? { text: output.text } : {}) };
}
