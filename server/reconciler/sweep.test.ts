import { describe, expect, test } from "bun:test";
import type { SeenEvaluation } from "../store/index.ts";
import { dueReason, latestSlotMs, sweepOffsetMs } from "./sweep.ts";
import { HEAD_A, HEAD_B, HEAD_C } from "./test-support.ts";
import type { OpenPullItem } from "./validate.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const listed = (extra: Partial<OpenPullItem> = {}): OpenPullItem => ({ number: 7, headSha: HEAD_A, baseSha: HEAD_B, baseRef: "main", updatedAtMs: 1_000, ...extra } as OpenPullItem);
const seenAt = (evaluatedAtMs: number, extra: Partial<SeenEvaluation> = {}): SeenEvaluation => ({ pull_number: 7, head_sha: HEAD_A, base_sha: HEAD_B, pull_updated_at_ms: 1_000, evaluated_at_ms: evaluatedAtMs, authority_subjects: null, ...extra });

describe("which listed pull requests a scan evaluates again", () => {
  const now = 100 * DAY;
  // Evaluated just after its latest slot instant: not due for the sweep until the next one.
  const fresh = latestSlotMs(now, sweepOffsetMs(50, 7, DAY), DAY) + 1;

  test("a pull request without a recorded evaluation is new", () => {
    expect(dueReason(listed(), undefined, 50, now, DAY)).toBe("new");
  });

  test("one whose listing shows what its last evaluation saw is left alone", () => {
    expect(dueReason(listed(), seenAt(fresh), 50, now, DAY)).toBeNull();
  });

  test.each([
    ["another head", { headSha: HEAD_C }, {}],
    ["another base commit", { baseSha: HEAD_C }, {}],
    ["another updated_at", { updatedAtMs: 2_000 }, {}],
    ["no base commit in the listing", { baseSha: null }, {}],
    ["no updated_at in the listing", { updatedAtMs: null }, {}],
    ["no updated_at recorded", {}, { pull_updated_at_ms: null }],
  ] as const)("%s: changed", (_what, item, seen) => {
    expect(dueReason(listed(item), seenAt(fresh, seen), 50, now, DAY)).toBe("changed");
  });

  test("an unchanged one is due for the sweep once its slot came round since its last evaluation, or its evaluation is older than the period", () => {
    const slot = latestSlotMs(now, sweepOffsetMs(50, 7, DAY), DAY);
    expect(dueReason(listed(), seenAt(slot - 1), 50, now, DAY)).toBe("sweep");
    expect(dueReason(listed(), seenAt(slot), 50, now, DAY)).toBeNull();
    expect(dueReason(listed(), seenAt(now - DAY - 1), 50, now, DAY)).toBe("sweep");
  });

  test("the latest slot instant is at or before now and less than a period before it", () => {
    for (const [t, offset] of [[0, 0], [5, 3], [5, 5], [5, 6], [-7, 2], [DAY * 3 + 17, DAY - 1]] as const) {
      const slot = latestSlotMs(t, offset, DAY);
      expect(slot).toBeLessThanOrEqual(t);
      expect(t - slot).toBeLessThan(DAY);
      expect((((slot - offset) % DAY) + DAY) % DAY).toBe(0);
    }
  });
});

describe("the rolling full sweep", () => {
  // 1,200 unchanged pull requests in 20 repositories, all evaluated at one moment (a fan-out, or the first scan after an
  // upgrade); a scan every 5 minutes for two days evaluates what is due and records it.
  const PERIOD = DAY;
  const INTERVAL = 5 * 60_000;
  const pulls = Array.from({ length: 1_200 }, (_, i) => ({ repositoryId: 1_000 + (i % 20), number: 1 + Math.floor(i / 20) }));

  function simulate() {
    const start = 10 * DAY + 12_345;
    const evaluatedAt = new Map(pulls.map((p) => [`${p.repositoryId}/${p.number}`, start]));
    const perScan: number[] = [];
    const perPull = new Map<string, number>();
    for (let now = start + INTERVAL; now <= start + 2 * PERIOD; now += INTERVAL) {
      let due = 0;
      for (const p of pulls) {
        const key = `${p.repositoryId}/${p.number}`;
        const seen = seenAt(evaluatedAt.get(key)!, { pull_number: p.number });
        if (dueReason(listed({ number: p.number }), seen, p.repositoryId, now, PERIOD) === null) continue;
        due++;
        evaluatedAt.set(key, now);
        perPull.set(key, (perPull.get(key) ?? 0) + 1);
      }
      perScan.push(due);
    }
    return { perScan, perPull };
  }

  test("evaluates every pull request once per period, spread over the scans instead of in one burst", () => {
    const { perScan, perPull } = simulate();
    // Exactly twice in two periods each: never skipped, never twice in one period.
    expect([...new Set(pulls.map((p) => perPull.get(`${p.repositoryId}/${p.number}`)))]).toEqual([2]);
    // An even spread is 2,400 evaluations / 576 scans ≈ 4.2 a scan; a burst would put hundreds in one scan.
    const mean = (pulls.length * 2) / perScan.length;
    expect(Math.max(...perScan)).toBeLessThanOrEqual(Math.ceil(mean * 3));
    // Every hour of the period has its share (within a factor of two of the mean).
    const hourly = Array.from({ length: 24 }, (_, h) => perScan.slice(h * 12, h * 12 + 12).reduce((a, b) => a + b, 0));
    for (const count of hourly) expect(count).toBeGreaterThan(pulls.length / 24 / 2);
  });
});
