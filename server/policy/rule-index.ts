// An index over ordered patterns answering "which is the last pattern that matches this path" while testing only plausible
// patterns: a map by literal leading directories (up to PREFIX_DEPTH of them) for anchored patterns, maps by literal segment and by extension for
// patterns that match at any depth, and a short list of everything else. Cost grows with the candidates of a path, not with
// the number of rules (issue 3 item 6; the naive reverse scan is kept for the benchmark and the equivalence property test).
// Each pattern is offered at most once per path (a path repeating a segment or an extension looks its bucket up once), and
// every candidate costs a step of the caller's MatchBudget besides the steps its own test spends. The walk of the path (its
// length and segments) and the ordering of its candidates are charged too (issue 25 item 5), and a pattern equal to a later
// one (CompiledPattern.identity) is never filed: only the last of them can win, so 100,000 copies cost what one costs.
import { PATH_SEGMENT_STEPS, SORT_COMPARISONS_PER_STEP, scanSteps, type MatchBudget } from "./match-budget.ts";
import type { CompiledPattern } from "./pattern.ts";

/** Anchored patterns are filed under their first literal segments, at most this many (a flat map beats a trie to build). */
export const PREFIX_DEPTH = 3;

/**
 * The chains of every bucket, and the dropping of equal patterns. `older[position]` is the previous position filed under the
 * same key (-1 ends the chain), `newer[position]` the next one (-1 at the head). Equal patterns always share a key (their
 * index keys are equal), so a pattern is only ever compared with the patterns of its own bucket: with the one it holds by a
 * string comparison (a run of copies of one rule is dropped that way), and through a map of identities once the bucket holds
 * two different patterns. Most keys hold one pattern, and their identities are never hashed.
 */
class Chains {
  readonly older: Int32Array;
  private readonly newer: Int32Array;
  /** For a dropped pattern, the later equal pattern that replaced it (-1: still filed). */
  private readonly replacedBy: Int32Array;
  /** Position of the filed pattern of each identity, for the patterns of buckets that have held two different ones. */
  private readonly filed = new Map<string, number>();
  private readonly hashed: Uint8Array;

  constructor(private readonly patterns: readonly CompiledPattern[]) {
    this.older = new Int32Array(patterns.length);
    this.newer = new Int32Array(patterns.length);
    this.replacedBy = new Int32Array(patterns.length).fill(-1);
    this.hashed = new Uint8Array(patterns.length);
  }

  /** Files `position` in front of the chain that starts at `head` (-1: empty); returns the chain's new head. */
  file(head: number, position: number): number {
    if (head >= 0) {
      const identity = this.patterns[position]!.identity;
      if (this.hashed[head] === 0) {
        // The bucket holds one pattern so far (`head`): equal, it is replaced; different, the bucket starts hashing.
        if (this.patterns[head]!.identity === identity) head = this.drop(head, head, position);
        else {
          this.remember(head);
          this.remember(position);
        }
      } else {
        const equal = this.filed.get(identity);
        if (equal !== undefined) head = this.drop(equal, head, position);
        this.remember(position);
      }
    }
    this.older[position] = head;
    this.newer[position] = -1;
    if (head >= 0) this.newer[head] = position;
    return position;
  }

  /** The position filed in place of `position`: itself, or the last of the later patterns equal to it. */
  filedFor(position: number): number {
    let filed = position;
    while (this.replacedBy[filed]! >= 0) filed = this.replacedBy[filed]!;
    // Each dropped pattern on the way now points at the answer, so a long run of copies is walked once.
    for (let at = position; at !== filed; ) {
      const next = this.replacedBy[at]!;
      this.replacedBy[at] = filed;
      at = next;
    }
    return filed;
  }

  private remember(position: number): void {
    this.hashed[position] = 1;
    this.filed.set(this.patterns[position]!.identity, position);
  }

  /** Takes `position` out of the chain that starts at `head` for `replacement`; returns the chain's head afterwards. */
  private drop(position: number, head: number, replacement: number): number {
    this.replacedBy[position] = replacement;
    const older = this.older[position]!;
    const newer = this.newer[position]!;
    if (older >= 0) this.newer[older] = newer;
    if (newer >= 0) this.older[newer] = older;
    return position === head ? older : head;
  }
}

/**
 * Buckets as chains (see Chains): `head` maps a key to the last position filed under it. No array per key, and a chain is
 * walked from the latest rule backwards.
 */
class Buckets {
  private readonly head = new Map<string, number>();
  constructor(private readonly chains: Chains) {}
  add(key: string, position: number): void {
    this.head.set(key, this.chains.file(this.head.get(key) ?? -1, position));
  }
  /** Adds the positions filed under `key` to `into`, newest first. */
  collect(key: string, into: Candidates): void {
    const older = this.chains.older;
    for (let position = this.head.get(key) ?? -1; position >= 0; position = older[position]!) into.push(position);
  }
}

/**
 * The candidates of one path in a reused typed array: a native numeric sort orders them (the comparator sort of a JavaScript
 * array costs 25-45 ns per comparison, this about 1), and only when the buckets did not deliver them newest first already.
 */
class Candidates {
  private buffer = new Int32Array(64);
  length = 0;
  /** Whether every position so far came below the one before it (newest first). */
  descending = true;

  reset(): void {
    this.length = 0;
    this.descending = true;
  }
  push(position: number): void {
    if (this.length === this.buffer.length) {
      const grown = new Int32Array(2 * this.buffer.length);
      grown.set(this.buffer);
      this.buffer = grown;
    }
    if (this.length > 0 && this.buffer[this.length - 1]! < position) this.descending = false;
    this.buffer[this.length++] = position;
  }
  /** The positions newest first (a view valid until the next reset), ordering them when needed: n·log2 n comparisons charged. */
  newestFirst(budget?: MatchBudget): Int32Array {
    const view = this.buffer.subarray(0, this.length);
    if (!this.descending) {
      budget?.spend(Math.ceil((this.length * Math.log2(this.length)) / SORT_COMPARISONS_PER_STEP));
      view.sort().reverse();
    }
    return view;
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

/** The one key of the bucket of patterns tested for every path. */
const ALWAYS = "";

export class PatternIndex {
  private readonly chains: Chains;
  private readonly always: Buckets;
  private readonly byPrefix: Buckets;
  private readonly bySegment: Buckets;
  private readonly byExtension: Buckets;
  private readonly candidates = new Candidates();
  private readonly extensions: string[] = [];
  private readonly segmentsSeen = new Set<string>();
  private readonly extensionsSeen = new Set<string>();

  constructor(private readonly patterns: readonly CompiledPattern[]) {
    // A pattern equal to a later one matches exactly the paths the later one matches, so it can never be the last match:
    // filing the later one takes the earlier one out of its chain.
    this.chains = new Chains(patterns);
    this.always = new Buckets(this.chains);
    this.byPrefix = new Buckets(this.chains);
    this.bySegment = new Buckets(this.chains);
    this.byExtension = new Buckets(this.chains);
    patterns.forEach((pattern, position) => {
      const key = pattern.indexKey;
      if (key.kind === "prefix") {
        this.byPrefix.add(leadingDirectories(key.path), position);
      } else if (key.kind === "segment") this.bySegment.add(key.value, position);
      else if (key.kind === "extension") this.byExtension.add(key.value, position);
      else this.always.add(ALWAYS, position);
    });
  }

  /** Position of the last pattern that matches `path`, or -1. */
  lastMatch(path: string, budget?: MatchBudget): number {
    const { positions, segments } = this.candidatesOf(path, budget);
    // Newest first: the first match is the answer (last matching rule wins), so broad early rules such as `*` are rarely tested.
    for (let i = 0; i < positions.length; i++) {
      const position = positions[i]!;
      if (this.patterns[position]!.test(path, segments, budget)) return position;
    }
    return -1;
  }

  /**
   * The position of the pattern filed in place of the one at `position`: the last pattern equal to it (itself when no later
   * pattern is equal). It matches exactly the same paths; the validator reports an unfiled pattern through it.
   */
  filedFor(position: number): number {
    return this.chains.filedFor(position);
  }

  /**
   * The positions of the patterns that may match `path`, newest first, each offered once and charged one step of `budget`,
   * with the path's segments for their tests; the walk of the path and any ordering of the candidates are charged first.
   * Valid until the next call (the list is reused). lastMatch tests them in this order; the validator (validate.ts) tests
   * the rest too, to find every filed rule that matches.
   */
  candidatesOf(path: string, budget?: MatchBudget): { readonly positions: ArrayLike<number>; readonly segments: readonly string[] } {
    const found = this.candidates;
    found.reset();
    // Splitting, hashing and looking up the path: linear in its length and its segments, whatever the rules.
    budget?.spend(scanSteps(path.length));
    const segments = path.split("/");
    budget?.spend(PATH_SEGMENT_STEPS * segments.length);
    let prefix = "";
    for (let depth = 1; depth <= PREFIX_DEPTH && depth <= segments.length; depth++) {
      prefix = depth === 1 ? segments[0]! : `${prefix}/${segments[depth - 1]}`;
      this.byPrefix.collect(prefix, found);
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
      this.bySegment.collect(segment, found);
      const dot = segment.lastIndexOf(".");
      if (dot < 0) continue;
      const extension = segment.slice(dot + 1);
      if (short ? extensions.includes(extension) : !firstSighting(this.extensionsSeen, extension)) continue;
      if (short) extensions.push(extension);
      this.byExtension.collect(extension, found);
    }
    // Last, newest first: these are mostly broad early rules (`*`), so the candidates often need no ordering at all.
    this.always.collect(ALWAYS, found);
    budget?.spend(found.length);
    return { positions: found.newestFirst(budget), segments };
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
