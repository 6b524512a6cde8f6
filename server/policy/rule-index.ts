// An index over ordered patterns answering "which is the last pattern that matches this path" while testing only plausible
// patterns: a trie of literal leading directories for anchored patterns, maps by literal segment and by extension for
// patterns that match at any depth, and a short list of everything else. Cost grows with the candidates of a path, not with
// the number of rules (issue 3 item 6; the naive reverse scan is kept for the benchmark and the equivalence property test).
import type { CompiledPattern } from "./pattern.ts";

interface TrieNode {
  readonly children: Map<string, TrieNode>;
  readonly entries: number[];
}

const newNode = (): TrieNode => ({ children: new Map(), entries: [] });

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

export class PatternIndex {
  private readonly root = newNode();
  private readonly bySegment = new Map<string, number[]>();
  private readonly byExtension = new Map<string, number[]>();
  private readonly candidates: number[] = [];

  constructor(private readonly patterns: readonly CompiledPattern[]) {
    patterns.forEach((pattern, position) => {
      const key = pattern.indexKey;
      if (key.kind === "prefix") {
        let node = this.root;
        for (const segment of key.segments) {
          let child = node.children.get(segment);
          if (child === undefined) {
            child = newNode();
            node.children.set(segment, child);
          }
          node = child;
        }
        node.entries.push(position);
      } else if (key.kind === "segment") push(this.bySegment, key.value, position);
      else if (key.kind === "extension") push(this.byExtension, key.value, position);
      else this.root.entries.push(position);
    });
  }

  /** Position of the last pattern that matches `path`, or -1. */
  lastMatch(path: string): number {
    const found = this.candidates;
    found.length = 0;
    const segments = path.split("/");
    let node: TrieNode | undefined = this.root;
    for (const entry of node.entries) found.push(entry);
    for (const segment of segments) {
      if (node !== undefined) {
        node = node.children.get(segment);
        if (node !== undefined) for (const entry of node.entries) found.push(entry);
      }
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
