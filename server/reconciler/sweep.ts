import { createHash } from "node:crypto";
import type { SeenEvaluation } from "../store/index.ts";
import type { OpenPullItem } from "./validate.ts";

/**
 * Which listed open pull requests a scan evaluates again (DESIGN 3.8): only those the listing shows something new about, plus
 * a rolling full sweep that evaluates every open pull request once per period, for what no listing shows (membership, team
 * and permission changes whose events were missed).
 *
 * The sweep is spread evenly over the period, so it never bursts: each pull request has a fixed slot, an offset into the
 * period from a hash of its repository ID and number, and is due when it was not evaluated since its latest slot instant
 * (offset + k × period, at or before now). A pull request is therefore evaluated at least once per period (plus one scan
 * interval), and a mass evaluation at one moment (a fan-out, the first scan after an upgrade) spreads out again over the next
 * period. The slot needs no state of the scan: any reconciler process computes the same one.
 */
export type DueReason = "new" | "changed" | "sweep";

/** Default of SERVICE_RECONCILE_FULL_SWEEP_HOURS. */
export const DEFAULT_FULL_SWEEP_HOURS = 24;

/** The pull request's offset into the sweep period, in [0, periodMs). */
export function sweepOffsetMs(repositoryId: number, pullNumber: number, periodMs: number): number {
  const hash = createHash("sha256").update(`${repositoryId}/${pullNumber}`).digest();
  return hash.readUIntBE(0, 6) % periodMs;
}

/** The latest instant at or before `now` that is `offset` plus a whole number of periods. */
export function latestSlotMs(now: number, offsetMs: number, periodMs: number): number {
  return now - ((((now - offsetMs) % periodMs) + periodMs) % periodMs);
}

/**
 * Why the pull request is evaluated again, or null when nothing says it may have changed: no recorded evaluation (new), a
 * head, base commit or `updated_at` other than the last evaluation saw, or one the listing did not give (changed), or no
 * evaluation since its sweep slot came round (sweep).
 */
export function dueReason(listed: OpenPullItem, seen: SeenEvaluation | undefined, repositoryId: number, now: number, periodMs: number): DueReason | null {
  if (seen === undefined) return "new";
  if (listed.headSha !== seen.head_sha || listed.baseSha === null || listed.baseSha !== seen.base_sha) return "changed";
  if (listed.updatedAtMs === null || seen.pull_updated_at_ms === null || listed.updatedAtMs !== Number(seen.pull_updated_at_ms)) return "changed";
  if (Number(seen.evaluated_at_ms) < latestSlotMs(now, sweepOffsetMs(repositoryId, listed.number, periodMs), periodMs)) return "sweep";
  return null;
}
