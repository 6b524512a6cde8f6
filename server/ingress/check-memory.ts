import { createHash } from "node:crypto";
import { type CallOptions, type CheckConclusion, type CheckOutput, type CheckTarget, type ForgeClient, isCheckGone, type ManagedCheck } from "../forge/index.ts";
import { forgetHeadCheck, markGuardedReset, readHeadCheck, readHeadCheckState, recordCheckCreation, rememberHeadCheck, type Store } from "../store/index.ts";

/**
 * The managed check's memory per head (issue 18; store ops/published-ops.ts): its check-run ID, remembered when it is found or
 * created under the head publication guard, so that a write needs no listing of check runs first; the listing happens only
 * when no ID is remembered or the forge says the remembered run is gone (404/410 on a write by ID: forgotten, looked up again).
 *
 * A head whose row says no creation was ever tried for it (migration 0005: an acceptance made the row, and every creation
 * records itself first, createCheck) has no managed check, so the creation under the guard needs no listing either.
 *
 * A remembered ID says nothing about what the check shows, so a reset by ID is always written ("when in doubt, write"); only a
 * listed check's status lets a reset be skipped, as before. The published digest (what a completed check shows) is kept by the
 * worker's publication (server/worker/publish.ts).
 */
export type HeadCheckTarget = CheckTarget & { readonly repositoryId: number };

export type CheckMemory = { readonly store: Store; readonly now: () => number };

type CheckForge = Pick<ForgeClient, "findManagedCheck" | "setCheckInProgress">;
type GuardedCheckForge = CheckForge & Pick<ForgeClient, "createInProgressCheck">;

/** What a completed check shows, as one value: equal digests mean a write would change nothing the forge displays. */
export function checkDigest(conclusion: string, output: CheckOutput): string {
  return createHash("sha256").update(JSON.stringify(["completed", conclusion, output.title, output.summary, output.text ?? null])).digest("hex");
}

/** A handle for a check run known only by its ID (its status is not known until the forge answers a write). */
export function checkHandle(id: number, headSha: string): ManagedCheck {
  return { id, headSha, status: "unknown", conclusion: null };
}

/** The remembered check run of the head, or null. */
export async function rememberedCheck(memory: CheckMemory, head: HeadCheckTarget): Promise<ManagedCheck | null> {
  const row = await memory.store.execute(() => readHeadCheck(head.repositoryId, head.headSha));
  return row === null ? null : checkHandle(Number(row.check_run_id), head.headSha);
}

/** The head's remembered check run (null: none), and whether a creation was ever tried for it (null: the head has no row). */
export type KnownCheck = { readonly check: ManagedCheck | null; readonly untried: boolean | null };

/** Under the head publication guard: what is known of the head's check. */
export async function knownCheck(memory: CheckMemory, head: HeadCheckTarget): Promise<KnownCheck> {
  const state = await memory.store.execute(() => readHeadCheckState(head.repositoryId, head.headSha));
  return { check: state.check === null ? null : checkHandle(Number(state.check.check_run_id), head.headSha), untried: state.untried };
}

/** Nothing is remembered and no creation was ever tried for the head: it has no managed check, and no listing can find one. */
export function noCheckCanExist(known: KnownCheck): boolean {
  return known.check === null && known.untried === true;
}

/**
 * Under the head publication guard, once no check was found: records that a creation is tried (before the write, so that
 * one whose record is lost is listed next time, never created twice), then creates the check in_progress.
 */
export async function createCheck(forge: Pick<ForgeClient, "createInProgressCheck">, memory: CheckMemory, head: HeadCheckTarget, output: CheckOutput, call?: CallOptions): Promise<ManagedCheck> {
  await memory.store.execute(() => recordCheckCreation({ installationId: head.installationId, repositoryId: head.repositoryId, headSha: head.headSha, now: memory.now() }));
  return forge.createInProgressCheck(head, output, call);
}

/** As createCheck, the check created already completed (one write: a merge group's verdict). */
export async function createCompletedCheck(
  forge: Pick<ForgeClient, "createCompletedCheck">, memory: CheckMemory, head: HeadCheckTarget, conclusion: CheckConclusion, output: CheckOutput, completedAt: Date, call?: CallOptions,
): Promise<ManagedCheck> {
  await memory.store.execute(() => recordCheckCreation({ installationId: head.installationId, repositoryId: head.repositoryId, headSha: head.headSha, now: memory.now() }));
  return forge.createCompletedCheck(head, conclusion, output, completedAt, call);
}

/**
 * Remembers the check run found or created for the head; the caller holds the head publication guard. `digest` is null or
 * the pending token of the completing write about to be made. Best effort: without the row the next write lists again.
 */
export async function rememberCheck(memory: CheckMemory, head: HeadCheckTarget, check: ManagedCheck, digest: string | null = null): Promise<boolean> {
  try {
    await memory.store.execute(() => rememberHeadCheck({ installationId: head.installationId, repositoryId: head.repositoryId, headSha: head.headSha, checkRunId: check.id, digest, now: memory.now() }));
    return true;
  } catch {
    return false;
  }
}

async function forgetCheck(memory: CheckMemory, head: HeadCheckTarget, check: ManagedCheck): Promise<void> {
  await memory.store.execute(() => forgetHeadCheck(head.repositoryId, head.headSha, check.id));
}

/**
 * Writes `write` to the remembered (or given) check run; when the forge says that run is gone, forgets it and returns null
 * (nothing was written), so the caller looks the check up again. Any other error propagates.
 */
export async function writeUnlessGone(memory: CheckMemory, head: HeadCheckTarget, check: ManagedCheck, write: (check: ManagedCheck) => Promise<ManagedCheck>): Promise<ManagedCheck | null> {
  try {
    return await write(check);
  } catch (error) {
    if (!isCheckGone(error)) throw error;
    await forgetCheck(memory, head, check);
    return null;
  }
}

/**
 * Writes to the head's managed check: to `first` (a run just written, or the remembered one) when there is one; when there is
 * none, or the forge says it is gone (then forgotten), to the one listed, if `writeListed` agrees. Returns the check written,
 * or the listed one left alone (null: the head has no check).
 */
export async function writeCheck(
  forge: CheckForge, memory: CheckMemory, head: HeadCheckTarget, first: ManagedCheck | null,
  write: (check: ManagedCheck) => Promise<ManagedCheck>, call?: CallOptions, writeListed: (check: ManagedCheck) => boolean = () => true,
): Promise<{ check: ManagedCheck | null; written: boolean }> {
  const done = first === null ? null : await writeUnlessGone(memory, head, first, write);
  if (done !== null) return { check: done, written: true };
  const listed = await forge.findManagedCheck(head, call);
  if (listed === null || !writeListed(listed)) return { check: listed, written: false };
  return { check: await write(listed), written: true };
}

/**
 * Resets the head's managed check to in_progress where no guard is held (fast path, head invalidation, fan-out): by its
 * remembered ID when there is one (always written), else found by listing and written unless it is in progress already.
 * `written` says whether a reset was sent and accepted; `check` is the check found (null: the head has none).
 */
export async function resetCheck(
  forge: CheckForge, memory: CheckMemory, head: HeadCheckTarget, output: CheckOutput, call?: CallOptions,
  /** The remembered check when the caller has just read it (rememberedCheck); read here when absent. */
  remembered?: ManagedCheck | null,
): Promise<{ check: ManagedCheck | null; written: boolean }> {
  const reset = (check: ManagedCheck) => forge.setCheckInProgress(head, check, output, call);
  return writeCheck(forge, memory, head, remembered === undefined ? await rememberedCheck(memory, head) : remembered, reset, call, (listed) => listed.status !== "in_progress");
}

/**
 * Under the head publication guard: sets the check to in_progress with `output` (always written: the output names why), by
 * its remembered ID, else the one listed, else a new one, and remembers it. The published digest is cleared first, and the
 * head's last reset is now (markGuardedReset): from the write on, the check shows something else.
 */
export async function ensureRememberedCheckInProgress(forge: GuardedCheckForge, memory: CheckMemory, head: HeadCheckTarget, output: CheckOutput, call?: CallOptions): Promise<ManagedCheck> {
  await memory.store.execute(() => markGuardedReset(head.repositoryId, head.headSha, memory.now()));
  const known = await knownCheck(memory, head);
  const remembered = known.check;
  const { check } = noCheckCanExist(known) ? { check: null } : await writeCheck(forge, memory, head, remembered, (found) => forge.setCheckInProgress(head, found, output, call), call);
  if (check !== null && remembered !== null && check.id === remembered.id) return check;
  const written = check ?? (await createCheck(forge, memory, head, output, call));
  await rememberCheck(memory, head, written);
  return written;
}
