// An index over ordered patterns answering "which is the last pattern that matches this path" while testing only plausible
// patterns: a map by literal leading directories (up to PREFIX_DEPTH of them) for anchored patterns, maps by literal segment and by extension for
// patterns that match at any depth, and a short list of everything else. Cost grows with the candidates of a path, not with
// the number of rules (issue 3 item 6; the naive reverse scan is kept for the benchmark and the equivalence property test).
// Each pattern is offered at most once per path (a path repeating a segment or an extension looks its bucket up once), and
// every candidate costs a step of the caller's MatchBudget besides the steps its own test spends.
import type { MatchBudget } from "./match-budget.ts";
import type { CompiledPattern } from "./pattern.ts";

/** Anchored patterns are filed under their first literal segments, at most this many (a flat map beats a trie to build). */
export const PREFIX_DEPTH = 3;

/**
 * Buckets as chains: `head` maps a key to the last position filed under it, `next[position]` is the previous position with
 * the same key (-1 ends the chain). No array per key, and a chain is walked from the latest rule backwards.
 */
class Buckets {
  private readonly head = new Map<string, number>();
  constructor(private readonly next: Int32Array) {}
  add(key: string, position: number): void {
    this.next[position] = this.head.get(key) ?? -1;
    this.head.set(key, position);
  }
  /** Pushes the positions filed under `key` that are above `floor`, newest first. */
  collect(key: string, floor: number, into: number[]): void {
    for (let position = this.head.get(key) ?? -1; position > floor; position = this.next[position]!) into.push(position);
  }
}

/** Paths with at most this many segments look for repeated segments by scanning instead of hashing. */
const SHORT_PATH_SEGMENTS = 16;

/** Adds `key` to `seen`; true when it was not there yet. */
function firstSighting(seen: Set<string>, key: string): boolean {
  if (seen.has(key)) return false;
  seen.add(key);
  return true;
}

/** The first PREFIX_DEPTH segments of a `/`-separated path. */
function leadingDirectories(path: string): string {
  let end = -1;
  for (let depth = 0; depth < PREFIX_DEPTH; depth++) {
    end = path.indexOf("/", end + 1);
    if (end < 0) return path;
  }
  return path.slice(0, end);
}

export class PatternIndex {
  private readonly always: number[] = [];
  private readonly byPrefix: Buckets;
  private readonly bySegment: Buckets;
  private readonly byExtension: Buckets;
  private readonly candidates: number[] = [];
  private readonly extensions: string[] = [];
  private readonly segmentsSeen = new Set<string>();
  private readonly extensionsSeen = new Set<string>();

  constructor(private readonly patterns: readonly CompiledPattern[]) {
    const next = new Int32Array(patterns.length);
    this.byPrefix = new Buckets(next);
    this.bySegment = new Buckets(next);
    this.byExtension = new Buckets(next);
    patterns.forEach((pattern, position) => {
      const key = pattern.indexKey;
      if (key.kind === "prefix") {
        this.byPrefix.add(leadingDirectories(key.path), position);
      } else if (key.kind === "segment") this.bySegment.add(key.value, position);
      else if (key.kind === "extension") this.byExtension.add(key.value, position);
      else this.always.push(position);
    });
  }

  /** Position of the last pattern that matches `path`, or -1. */
  lastMatch(path: string, budget?: MatchBudget): number {
    const { positions, segments } = this.candidatesOf(path, budget);
    // Newest first: the first match is the answer (last matching rule wins), so broad early rules such as `*` are rarely tested.
    for (const position of positions) {
      if (this.patterns[position]!.test(path, segments, budget)) return position;
    }
    return -1;
  }

  /**
   * The positions of the patterns that may match `path`, newest first, each offered once and charged one step of `budget`,
   * with the path's segments for their tests. Valid until the next call (the list is reused). lastMatch tests them in this
   * order; the validator (validate.ts) tests the rest too, to find every rule that matches.
   */
  candidatesOf(path: string, budget?: MatchBudget): { readonly positions: readonly number[]; readonly segments: readonly string[] } {
    const found = this.candidates;
    found.length = 0;
    for (const entry of this.always) found.push(entry);
    const segments = path.split("/");
    let prefix = "";
    for (let depth = 1; depth <= PREFIX_DEPTH && depth <= segments.length; depth++) {
      prefix = depth === 1 ? segments[0]! : `${prefix}/${segments[depth - 1]}`;
      this.byPrefix.collect(prefix, -1, found);
    }
    // Every pattern is filed under one key, so looking each key up once offers each pattern once. Short paths (nearly all)
    // find a repeated segment by scanning the segments before it; long ones use sets, so a deep path costs linear time.
    const short = segments.length <= SHORT_PATH_SEGMENTS;
    const extensions = this.extensions;
    extensions.length = 0;
    if (!short) {
      this.segmentsSeen.clear();
      this.extensionsSeen.clear();
    }
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      if (short ? segments.indexOf(segment) < i : !firstSighting(this.segmentsSeen, segment)) continue;
      this.bySegment.collect(segment, -1, found);
      const dot = segment.lastIndexOf(".");
      if (dot < 0) continue;
      const extension = segment.slice(dot + 1);
      if (short ? extensions.includes(extension) : !firstSighting(this.extensionsSeen, extension)) continue;
      if (short) extensions.push(extension);
      this.byExtension.collect(extension, -1, found);
    }
    budget?.spend(found.length);
    if (found.length > 1) found.sort((a, b) => b - a);
    return { positions: found, segments };
  }

  /** Whether any pattern matches `path`. */
  matchesAny(path: string, budget?: MatchBudget): boolean {
    return this.lastMatch(path, budget) >= 0;
  }

  /** The reverse scan the index replaces: kept as the benchmark baseline and the reference in property tests. */
  lastMatchNaive(path: string): number {
    for (let position = this.patterns.length - 1; position >= 0; position--) {
      if (this.patterns[position]!.test(path)) return position;
    }
    return -1;
  }
}
