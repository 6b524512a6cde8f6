// The segment matcher as it was before issue 16 item 2, kept only as the decision benchmark's baseline: a depth-first search
// that tries every split at every `**` without remembering failed (pattern position, path index) pairs, so its work grows as
// path depth to the power of the number of `**`. It covers what the benchmark's patterns use (anchored patterns of literal,
// `*`/`?` and `**` segments, no escapes, no trailing slash) and gives up at a wall-clock deadline.

export class DeadlineExceeded extends Error {}

type Segment = { readonly globstar: true } | { readonly globstar: false; readonly test: (text: string) => boolean };

function segmentOf(text: string): Segment {
  if (text === "**") return { globstar: true };
  if (!/[*?]/.test(text)) return { globstar: false, test: (part) => part === text };
  const regex = new RegExp(`^${text.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")}$`, "u");
  return { globstar: false, test: (part) => regex.test(part) };
}

/** A matcher for an anchored pattern (`/a/**\/b`); test() throws DeadlineExceeded once `deadline` (performance.now()) passes. */
export function backtrackingMatcher(source: string): (path: string, deadline: number) => boolean {
  const segments = source.replace(/^\//, "").split("/").map(segmentOf);
  const n = segments.length;
  let calls = 0;
  return (path, deadline) => {
    const parts = path.split("/");
    if (performance.now() > deadline) throw new DeadlineExceeded();
    const from = (pi: number, si: number): boolean => {
      if (++calls % 65_536 === 0 && performance.now() > deadline) throw new DeadlineExceeded();
      if (pi === n) return true; // the path itself, or anything below it
      const segment = segments[pi]!;
      if (segment.globstar) {
        if (pi === n - 1) return parts.length - si >= 1;
        for (let k = si; k < parts.length; k++) if (from(pi + 1, k)) return true;
        return false;
      }
      if (si >= parts.length || !segment.test(parts[si]!)) return false;
      return from(pi + 1, si + 1);
    };
    return from(0, 0);
  };
}
