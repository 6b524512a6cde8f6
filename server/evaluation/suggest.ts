// Suggested reviewers (DESIGN 3.2 rule 8): a deterministic smallest set of owners whose approvals would satisfy every owner
// set still missing approvals. Each suggested owner stands for one more approval in each set that lists it. Exact search
// (by size, then lexicographic) for up to EXACT_SEARCH_LIMIT candidates; greedy set cover above that (ties by name).
// Blocked and unknown sets are not covered: they need a dismissal, a re-review or complete evidence, not more reviewers.
import { ownerKind } from "../policy/codeowners.ts";
import type { OwnerSetResult } from "./decision.ts";

export const EXACT_SEARCH_LIMIT = 12;

export function suggestReviewers(sets: readonly OwnerSetResult[], authorLogin: string): string[] {
  const author = `@${authorLogin}`.toLowerCase();
  const spelling = new Map<string, string>();
  const needs: { need: number; candidates: Set<string> }[] = [];
  for (const set of sets) {
    if (set.status !== "missing") continue;
    const countedUsers = new Set(set.counted.flatMap((approval) => (approval.via.kind === "user" ? [approval.via.owner.toLowerCase()] : [])));
    const candidates = new Set<string>();
    for (const owner of set.owners) {
      const key = owner.toLowerCase();
      if (ownerKind(owner) === "email" || key === author || countedUsers.has(key)) continue;
      candidates.add(key);
      if (!spelling.has(key)) spelling.set(key, owner);
    }
    needs.push({ need: set.required - set.approvals, candidates });
  }
  if (needs.length === 0) return [];
  const all = [...spelling.keys()].sort();
  const chosen = all.length <= EXACT_SEARCH_LIMIT ? exact(all, needs) : null;
  return (chosen ?? greedy(all, needs)).map((key) => spelling.get(key)!);
}

function satisfies(chosen: readonly string[], needs: readonly { need: number; candidates: Set<string> }[]): boolean {
  return needs.every(({ need, candidates }) => chosen.filter((owner) => candidates.has(owner)).length >= need);
}

function exact(all: readonly string[], needs: readonly { need: number; candidates: Set<string> }[]): string[] | null {
  const pick: string[] = [];
  const search = (start: number, size: number): string[] | null => {
    if (pick.length === size) return satisfies(pick, needs) ? [...pick] : null;
    for (let i = start; i <= all.length - (size - pick.length); i++) {
      pick.push(all[i]!);
      const found = search(i + 1, size);
      pick.pop();
      if (found !== null) return found;
    }
    return null;
  };
  for (let size = 1; size <= all.length; size++) {
    const found = search(0, size);
    if (found !== null) return found;
  }
  return null; // not enough distinct owners: fall back to greedy, which suggests everyone useful
}

function greedy(all: readonly string[], needs: readonly { need: number; candidates: Set<string> }[]): string[] {
  const remaining = needs.map((entry) => ({ need: entry.need, candidates: new Set(entry.candidates) }));
  const setsOf = new Map<string, number[]>();
  remaining.forEach((entry, index) => {
    if (entry.need <= 0) return;
    for (const owner of entry.candidates) {
      const list = setsOf.get(owner);
      if (list === undefined) setsOf.set(owner, [index]);
      else list.push(index);
    }
  });
  // cover[owner] = sets still needing approvals that this owner could still give one to
  const cover = new Map<string, number>();
  for (const [owner, list] of setsOf) cover.set(owner, list.length);
  const chosen: string[] = [];
  for (;;) {
    let best: string | null = null;
    let bestCover = 0;
    for (const owner of all) {
      const value = cover.get(owner) ?? 0;
      if (value > bestCover) {
        best = owner;
        bestCover = value;
      }
    }
    if (best === null) return chosen;
    chosen.push(best);
    cover.set(best, 0);
    for (const index of setsOf.get(best) ?? []) {
      const entry = remaining[index]!;
      if (entry.need <= 0 || !entry.candidates.delete(best)) continue;
      entry.need--;
      if (entry.need === 0) for (const other of entry.candidates) cover.set(other, (cover.get(other) ?? 0) - 1);
    }
  }
}
