// An index over ordered patterns answering "which is the last pattern that matches this path" while testing only plausible
// patterns: a map by literal leading directories (up to PREFIX_DEPTH of them) for anchored patterns, maps by literal segment and by extension for
// patterns that match at any depth, and a short list of everything else. Cost grows with the candidates of a path, not with
// the number of rules (issue 3 item 6; the naive reverse scan is kept for the benchmark and the equivalence property test).
import type { CompiledPattern } from "./pattern.ts";

/** Anchored patterns are filed under their first literal segments, at most this many (a flat map beats a trie to build). */
export const PREFIX_DEPTH = 3;

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

export class PatternIndex {
  private readonly always: number[] = [];
  private readonly byPrefix = new Map<string, number[]>();
  private readonly bySegment = new Map<string, number[]>();
  private readonly byExtension = new Map<string, number[]>();
  private readonly candidates: number[] = [];

  constructor(private readonly patterns: readonly CompiledPattern[]) {
    patterns.forEach((pattern, position) => {
      const key = pattern.indexKey;
      if (key.kind === "prefix") {
        const depth = Math.min(key.segments.length, PREFIX_DEPTH);
        push(this.byPrefix, `${depth}\u0000${key.segments.slice(0, depth).join("/")}`, position);
      } else if (key.kind === "segment") push(this.bySegment, key.value, position);
      else if (key.kind === "extension") push(this.byExtension, key.value, position);
      else this.always.push(position);
    });
  }

  /** Position of the last pattern that matches `path`, or -1. */
  lastMatch(path: string): number {
    const found = this.candidates;
    found.length = 0;
    for (const entry of this.always) found.push(entry);
    const segments = path.split("/");
    let prefix = "";
    for (let depth = 1; depth <= PREFIX_DEPTH && depth <= segments.length; depth++) {
      prefix = depth === 1 ? segments[0]! : `${prefix}/${segments[depth - 1]}`;
      const byPrefix = this.byPrefix.get(`${depth}\u0000${prefix}`);
      if (byPrefix !== undefined) for (const entry of byPrefix) found.push(entry);
    }
    for (const segment of segments) {
      const bySegment = this.bySegment.get(segment);
      if (bySegment !== undefined) for (const entry of bySegment) found.push(entry);
      const dot = segment.lastIndexOf(".");
      if (dot >= 0) {
        const byExtension = this.byExtension.get(segment.slice(dot + 1));
        if (byExtension !== undefined) for (const entry of byExtension) found.push(entry);
      }
    }
    let best = -1;
    for (const position of found) {
      if (position > best && this.patterns[position]!.test(path)) best = position;
    }
    return best;
  }

  /** Whether any pattern matches `path`. */
  matchesAny(path: string): boolean {
    return this.lastMatch(path) >= 0;
  }

  /** The reverse scan the index replaces: kept as the benchmark baseline and the reference in property tests. */
  lastMatchNaive(path: string): number {
    for (let position = this.patterns.length - 1; position >= 0; position--) {
      if (this.patterns[position]!.test(path)) return position;
    }
    return -1;
  }
}
