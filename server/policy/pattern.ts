// CODEOWNERS path patterns (DESIGN 3.2 rule 1), also used for delegation paths and guardrails (DESIGN 3.1).
//
// Why our own matcher and not picomatch: picomatch/posix would be browser-safe, but its semantics are shell globbing, not
// gitignore: it has no "a pattern without a slash matches at any depth", no "a match on a directory covers everything below",
// no "trailing slash means directory", and it supports `[ ]`, `!`, braces and extglobs that CODEOWNERS must reject. Wrapping
// it would mean rewriting every pattern first, and the index (rule-index.ts) needs the parsed structure anyway. Patterns are
// kept as segments and matched segment by segment without building a RegExp, so parsing 100,000 rules stays cheap;
// `patternRegExp` gives the same semantics as one RegExp, used as the reference in property tests.
//
// Semantics (gitignore, with GitHub's departures marked GitHub):
// - A leading `/`, or a `/` in the middle, anchors the pattern to the repository root; otherwise it matches at any depth.
// - A trailing `/` matches directories only: something must exist below the match.
// - A pattern that matches a directory covers everything below it (`docs` owns `docs/a/b.md`).
// - `*` matches any run of characters except `/`; `?` one character except `/`; `**` as a whole segment matches any number
//   of directories (leading `**/`, middle `/**/`, trailing `/**` which needs something below). `**` inside a segment is `*`.
// - GitHub: a trailing `/*` matches direct children only (gitignore would also cover what is below a matched child directory).
//   A lone `*` still matches everything, since it matches at any depth.
// - GitHub: `!` negation, `[ ]` character ranges and `\#` (escaping a leading `#`) are not supported: reported as errors.
//   We also reject `***` and empty segments (`a//b`), which have no defined meaning; an error line fails closed.
// - `\x` escapes any other character (`\*`, `\?`, `\ ` for a space) but `/`, which is rejected (it would be a slash inside
//   a segment); matching is case-sensitive.
//
// Matching work is linear in pattern × path whatever the pattern (see matchSegments and globMatch), and counted in a
// MatchBudget so that one evaluation's total is bounded (issue 16 item 2).
import { MatchBudget, scanSteps } from "./match-budget.ts";

const STAR = 0;
const ONE = 1;
/** A glob segment as a sequence of characters (strings of length 1) and wildcard markers. */
type GlobUnit = string | typeof STAR | typeof ONE;

type GlobSegment = { readonly kind: "glob"; units: readonly GlobUnit[] | null; readonly source: string; readonly loneStar: boolean; readonly tail: string };
type Segment = { readonly kind: "globstar" } | { readonly kind: "literal"; readonly text: string } | GlobSegment;

/** Where the index may file a pattern so that only plausible patterns are tested for a path (see rule-index.ts). */
export type IndexKey =
  /** Anchored pattern whose leading segments are literal: candidates for paths starting with these segments. */
  | { readonly kind: "prefix"; readonly path: string }
  /** The pattern needs some path segment equal to this literal. */
  | { readonly kind: "segment"; readonly value: string }
  /** The pattern needs some path segment whose text after its last `.` equals this. */
  | { readonly kind: "extension"; readonly value: string }
  /** Anything else: always tested. */
  | { readonly kind: "always" };

export interface CompiledPattern {
  readonly source: string;
  readonly anchored: boolean;
  readonly indexKey: IndexKey;
  /**
   * Equal for two patterns exactly when they are the same pattern, whatever their spelling (`a/` and `\a/`): same `test`,
   * same `indexKey`. The rule index keeps only the last of a run of equal patterns, the only one of them that can win.
   */
  readonly identity: string;
  /**
   * Does the pattern own this path (repository-relative, no leading slash, `/`-separated)? `parts` may pass
   * `path.split("/")` when the caller already has it. The work is spent from `budget` (throwing MatchBudgetExceeded past
   * its limit): a wildcard pattern's states and iterations, a literal pattern's string scans by the characters they cover
   * (the rule index charges one more step per candidate it offers). Without a budget nothing is counted.
   */
  test(path: string, parts?: readonly string[], budget?: MatchBudget): boolean;
}

export type PatternResult = { readonly ok: true; readonly pattern: CompiledPattern } | { readonly ok: false; readonly message: string };

function globSegment(units: GlobUnit[]): Segment {
  let tail = "";
  for (let i = units.length - 1; i >= 0 && typeof units[i] === "string"; i--) tail = (units[i] as string) + tail;
  return { kind: "glob", units, source: "", loneStar: units.length === 1 && units[0] === STAR, tail };
}

/** Glob units of unescaped segment text, built on first use so parsing stays cheap. */
function unitsOf(text: string): GlobUnit[] {
  const units: GlobUnit[] = [];
  for (const ch of text) {
    if (ch === "*") {
      if (units[units.length - 1] !== STAR) units.push(STAR);
    } else units.push(ch === "?" ? ONE : ch);
  }
  return units;
}

/** Unescaped segment text (no backslash in the pattern): the common, fast case. */
function plainSegment(text: string): Segment | string {
  if (text === "**") return { kind: "globstar" };
  const star = text.lastIndexOf("*");
  const one = text.lastIndexOf("?");
  if (star < 0 && one < 0) return { kind: "literal", text };
  if (text.includes("***")) return "'***' is not a valid wildcard";
  return { kind: "glob", units: null, source: text, loneStar: text === "*" || /^\*+$/.test(text), tail: text.slice(Math.max(star, one) + 1) };
}

/** Segments of a pattern with backslash escapes: an escaped character is always literal and never part of `**`. */
function escapedSegments(source: string): (Segment | "empty")[] | string {
  const out: (Segment | "empty")[] = [];
  let units: GlobUnit[] = [];
  let raw = "";
  const close = () => {
    if (raw === "**") out.push({ kind: "globstar" });
    else if (units.length === 0) out.push("empty");
    else if (units.every((unit) => typeof unit === "string")) out.push({ kind: "literal", text: units.join("") });
    else out.push(globSegment(units));
    units = [];
    raw = "";
  };
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === undefined) return "a pattern cannot end with a backslash";
      if (next === "#") return "escaping '#' with a backslash is not supported in CODEOWNERS";
      // A `/` inside a segment could never equal a path segment, yet the literal matcher and the RegExp reference would
      // match it as a separator, and the index would file it under a segment no path has: no reading is safe.
      if (next === "/") return "escaping '/' with a backslash is not supported: '/' always separates directories";
      units.push(next);
      raw += "\\";
      i++;
    } else if (ch === "/") close();
    else {
      raw += ch;
      if (raw.includes("***")) return "'***' is not a valid wildcard";
      if (ch === "*") {
        if (units[units.length - 1] !== STAR) units.push(STAR);
      } else units.push(ch === "?" ? ONE : ch);
    }
  }
  close();
  return out;
}

/**
 * Wildcard match of one path segment (`*` any run, `?` one character; neither sees `/`, segments contain none): the classic
 * two-pointer match that backtracks only to the last `*`, so at most about units × characters iterations, each one a step.
 */
function globMatch(units: readonly GlobUnit[], text: string, budget: MatchBudget): boolean {
  let p = 0;
  let s = 0;
  let starP = -1;
  let starS = 0;
  while (s < text.length) {
    if (++budget.used > budget.limit) budget.check();
    const unit = units[p];
    if (p < units.length && unit !== STAR && (unit === ONE || unit === text[s])) {
      // `?` consumes a whole code point (a surrogate pair is one character)
      if (unit === ONE) {
        const code = text.charCodeAt(s);
        s += code >= 0xd800 && code <= 0xdbff && s + 1 < text.length ? 2 : 1;
      } else s++;
      p++;
    } else if (p < units.length && unit === STAR) {
      starP = p++;
      starS = s;
    } else if (starP >= 0) {
      p = starP + 1;
      s = ++starS;
    } else return false;
  }
  while (p < units.length && units[p] === STAR) p++;
  return p === units.length;
}

function segmentMatches(segment: Segment, text: string, budget: MatchBudget): boolean {
  if (segment.kind === "literal") return segment.text === text;
  if (segment.kind === "glob") {
    if (segment.loneStar) return true; // any one segment (paths have no empty segments except a trailing `/`)
    if (segment.tail !== "" && !text.endsWith(segment.tail)) return false;
    segment.units ??= unitsOf(segment.source);
    return globMatch(segment.units, text, budget);
  }
  return true;
}

// Scratch space of matchSegments (which never re-enters itself): the pattern positions alive at the current path index, those
// alive after the next path segment, and the path index each position was last listed at (so it is listed once per index).
const scratch = { now: [] as number[], after: [] as number[], listedAt: new Int32Array(64) };

/**
 * The segment matcher as a set of live pattern positions moved along the path, the way RE2 runs a regular expression (an
 * NFA simulation; a library would need a RegExp, which this module does not build, see the top). Each (pattern position,
 * path index) state is visited at most once, so one match costs at most (pattern segments + 1) × (path segments + 1) steps
 * plus the in-segment wildcard work, however many `**` the pattern has. The depth-first search it replaces revisited the
 * same states once per way of reaching them: path depth to the power of the number of `**`.
 *
 * Position `pi` alive at path index `si` means segments[0..pi) matched parts[0..si). A leading or middle `**` at `pi` also
 * makes `pi + 1` alive at `si` (zero directories) and stays alive across the next segment (one more directory).
 */
function matchSegments(segments: readonly Segment[], directoryOnly: boolean, parts: readonly string[], budget: MatchBudget): boolean {
  const n = segments.length;
  const m = parts.length;
  const last = segments[n - 1]!;
  const lastLoneStar = last.kind === "glob" && last.loneStar;
  // Up to the first `**` only one position can be alive: walk it without the set.
  let first = 0;
  while (first < n && first < m && segments[first]!.kind !== "globstar") {
    if (++budget.used > budget.limit) budget.check();
    if (!segmentMatches(segments[first]!, parts[first]!, budget)) return false;
    first++;
  }
  if (first === n) return directoryOnly ? m - n >= 1 : lastLoneStar ? m === n : true;
  if (segments[first]!.kind !== "globstar") return false; // the path ended before the pattern
  if (scratch.listedAt.length <= n) scratch.listedAt = new Int32Array(2 * (n + 1));
  const listedAt = scratch.listedAt.fill(-1, 0, n + 1);
  let now = scratch.now;
  let after = scratch.after;
  now.length = 0;
  now.push(first);
  listedAt[first] = first;
  for (let si = first; ; si++) {
    const rest = m - si;
    // Acceptance, and the zero-directory step of `**` (`now` grows while it is walked).
    for (let i = 0; i < now.length; i++) {
      const pi = now[i]!;
      if (++budget.used > budget.limit) budget.check();
      if (pi === n) {
        // The whole pattern matched parts[0..si). GitHub: a trailing `/*` owns direct children only; a trailing `/` needs
        // something below; otherwise the path itself or anything below it.
        if (directoryOnly ? rest >= 1 : lastLoneStar ? rest === 0 : true) return true;
      } else if (segments[pi]!.kind === "globstar") {
        if (pi === n - 1) {
          // A trailing `**` needs something below it; a lone `**/` needs a directory and something in it.
          if (rest >= (n === 1 && directoryOnly ? 2 : 1)) return true;
        } else if (listedAt[pi + 1] !== si) {
          listedAt[pi + 1] = si;
          now.push(pi + 1);
        }
      }
    }
    if (si === m || now.length === 0) return false;
    after.length = 0;
    const part = parts[si]!;
    for (let i = 0; i < now.length; i++) {
      const pi = now[i]!;
      if (pi === n) continue;
      const segment = segments[pi]!;
      const to = segment.kind === "globstar" ? (pi < n - 1 ? pi : -1) : segmentMatches(segment, part, budget) ? pi + 1 : -1;
      if (to >= 0 && listedAt[to] !== si + 1) {
        listedAt[to] = si + 1;
        after.push(to);
      }
    }
    const swap = now;
    now = after;
    after = swap;
  }
}

const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|/]/g;

function unitsRegex(segment: Segment): string {
  if (segment.kind === "literal") return segment.text.replace(REGEX_SYNTAX, "\\$&");
  if (segment.kind === "globstar") return "";
  if (segment.loneStar) return "[^/]*";
  segment.units ??= unitsOf(segment.source);
  return segment.units.map((unit) => (unit === STAR ? "[^/]*" : unit === ONE ? "[^/]" : unit.replace(REGEX_SYNTAX, "\\$&"))).join("");
}

function buildRegex(segments: readonly Segment[], directoryOnly: boolean): RegExp {
  const n = segments.length;
  let out = "^";
  for (let i = 0; i < n; i++) {
    const segment = segments[i]!;
    if (segment.kind === "globstar") {
      if (n === 1) out += directoryOnly ? "[^]*?/.+" : ".+";
      else if (i === 0) out += "(?:.+/)?";
      else if (i === n - 1) out += "/.+";
      else out += "(?:/.+)?";
      continue;
    }
    if (i > 0 && !(i === 1 && segments[0]!.kind === "globstar")) out += "/";
    out += unitsRegex(segment);
    if (i === n - 1) {
      if (directoryOnly) out += "/.+";
      else if (!(segment.kind === "glob" && segment.loneStar)) out += "(?:/.+)?";
    }
  }
  return new RegExp(out + "$", "u");
}

function extensionOf(tail: string): string | null {
  const dot = tail.lastIndexOf(".");
  return dot >= 0 ? tail.slice(dot + 1) : null;
}

/** The most selective necessary condition the index can check cheaply (see rule-index.ts). */
function indexKeyOf(segments: readonly Segment[], anchored: boolean): IndexKey {
  const prefix: string[] = [];
  if (anchored) for (const segment of segments) {
    if (segment.kind !== "literal") break;
    prefix.push(segment.text);
  }
  if (prefix.length >= 2) return { kind: "prefix", path: prefix.join("/") };
  let longest: string | null = null;
  for (const segment of segments) {
    if (segment.kind === "literal" && (longest === null || segment.text.length > longest.length)) longest = segment.text;
  }
  if (longest !== null && !(prefix.length === 1 && prefix[0] === longest)) return { kind: "segment", value: longest };
  if (prefix.length === 1) return { kind: "prefix", path: prefix[0]! };
  for (const segment of segments) {
    if (segment.kind === "glob") {
      const extension = extensionOf(segment.tail);
      if (extension !== null) return { kind: "extension", value: extension };
    }
  }
  return { kind: "always" };
}

const BRACKETS = /[[\]]/;

const NOT_LITERAL = /[*?\\[\]!]/;

/** Counts nothing: for callers that match a few paths outside an evaluation (the playground's queries, tests). */
const UNMETERED = new MatchBudget(Number.POSITIVE_INFINITY);

/**
 * Matching for a pattern made only of literal segments: string comparisons, no segment walk. An anchored pattern compares
 * at most its own length from the start of the path; one that matches at any depth scans the whole path for `/literal/`,
 * so a long path costs it in proportion (issue 25 item 5: one step for a 10 KB scan let 100,000 rules run for seconds).
 */
function literalTest(literal: string, anchored: boolean, directoryOnly: boolean): CompiledPattern["test"] {
  const below = literal + "/";
  if (anchored) {
    const compared = below.length;
    return directoryOnly
      ? (path, _parts, budget) => {
          budget?.spend(scanSteps(Math.min(path.length, compared)));
          return path.startsWith(below);
        }
      : (path, _parts, budget) => {
          budget?.spend(scanSteps(Math.min(path.length, compared)));
          return path === literal || path.startsWith(below);
        };
  }
  const inner = "/" + below;
  const tail = "/" + literal;
  return directoryOnly
    ? (path, _parts, budget) => {
        budget?.spend(scanSteps(path.length));
        return path.startsWith(below) || path.includes(inner);
      }
    : (path, _parts, budget) => {
        budget?.spend(scanSteps(path.length));
        return path === literal || path.startsWith(below) || path.includes(inner) || path.endsWith(tail);
      };
}

/**
 * The identity of a literal pattern: `literalTest`'s arguments, which decide its test and its index key (see below), spelled
 * as the plainest source, `/` + literal when anchored and a trailing `/` for a directory. Segments are never empty and never
 * hold a `/` (an escaped slash is rejected), so no two argument sets share a spelling, and none starts with `//`, which
 * starts every wildcard pattern's identity. compileLiteral uses a source already in that spelling as it is: no new string.
 */
function literalIdentity(literal: string, anchored: boolean, directoryOnly: boolean): string {
  return `${anchored ? "/" : ""}${literal}${directoryOnly ? "/" : ""}`;
}

/** Literal patterns (no wildcard, escape, bracket or `!`): the common case in large files, without intermediate objects. */
function compileLiteral(source: string): PatternResult | null {
  const leadingSlash = source.length > 1 && source.startsWith("/");
  const trailingSlash = source.endsWith("/") && source.length > (leadingSlash ? 1 : 0);
  const literal = source.slice(leadingSlash ? 1 : 0, trailingSlash ? -1 : undefined);
  if (literal === "" || literal.startsWith("/") || literal.endsWith("/") || literal.includes("//")) return null; // the general path reports it
  const anchored = leadingSlash || literal.includes("/");
  const indexKey: IndexKey = anchored ? { kind: "prefix", path: literal } : { kind: "segment", value: literal };
  const identity = leadingSlash || !anchored ? source : literalIdentity(literal, anchored, trailingSlash); // see literalIdentity
  return { ok: true, pattern: { source, anchored, indexKey, identity, test: literalTest(literal, anchored, trailingSlash) } };
}

/** Compiles one CODEOWNERS-syntax pattern, or says why it is invalid. */
export function compilePattern(source: string): PatternResult {
  if (source !== "" && !NOT_LITERAL.test(source)) {
    const literal = compileLiteral(source);
    if (literal !== null) return literal;
  }
  const structure = parseStructure(source);
  if (typeof structure === "string") return { ok: false, message: structure };
  const { segments, directoryOnly, anchored } = structure;
  const onlyLiterals = segments.every((segment) => segment.kind === "literal");
  let test: CompiledPattern["test"];
  let identity: string;
  if (onlyLiterals) {
    // Escapes are gone from the segments' text, so `\a/` and `a/` get the same literal, test and identity. The index key
    // of a literal pattern (indexKeyOf, or compileLiteral's) also follows from the same three arguments alone.
    const literal = segments.map((segment) => (segment as { text: string }).text).join("/");
    test = literalTest(literal, anchored, directoryOnly);
    identity = literalIdentity(literal, anchored, directoryOnly);
  } else {
    const full = anchored || segments[0]!.kind === "globstar" ? segments : [{ kind: "globstar" } as Segment, ...segments];
    test = (path, parts, budget = UNMETERED) => matchSegments(full, directoryOnly, parts ?? path.split("/"), budget);
    identity = "//" + source; // compiled from the source alone; other spellings of the same wildcards stay apart (charged as any rule)
  }
  return { ok: true, pattern: { source, anchored, indexKey: indexKeyOf(segments, anchored), identity, test } };
}

interface Structure {
  readonly segments: readonly Segment[];
  readonly directoryOnly: boolean;
  readonly anchored: boolean;
}

function parseStructure(source: string): Structure | string {
  if (source === "") return "empty pattern";
  if (source.startsWith("!")) return "negation ('!') is not supported in CODEOWNERS";
  if (BRACKETS.test(source)) return "character ranges ('[ ]') are not supported in CODEOWNERS";
  let raw: (Segment | "empty")[];
  if (source.includes("\\")) {
    const escaped = escapedSegments(source);
    if (typeof escaped === "string") return escaped;
    raw = escaped;
  } else {
    raw = [];
    for (const text of source.split("/")) {
      if (text === "") raw.push("empty");
      else {
        const segment = plainSegment(text);
        if (typeof segment === "string") return segment;
        raw.push(segment);
      }
    }
  }
  let first = 0;
  let end = raw.length;
  const leadingSlash = raw.length > 1 && raw[0] === "empty";
  if (leadingSlash) first = 1;
  const trailingSlash = end - first >= 1 && raw[end - 1] === "empty";
  if (trailingSlash) end--;
  if (end <= first) return "a pattern must name something besides '/'";
  const segments: Segment[] = [];
  for (let i = first; i < end; i++) {
    const segment = raw[i]!;
    if (segment === "empty") return "empty path segment ('//')";
    // `**/**` means the same as `**`
    if (segment.kind === "globstar" && segments[segments.length - 1]?.kind === "globstar") continue;
    segments.push(segment);
  }
  const anchored = leadingSlash || segments.length > 1;
  // `foo/**/` is `foo/**`; a lone `**/` still means "inside some directory".
  const directoryOnly = trailingSlash && (segments.length === 1 || segments[segments.length - 1]!.kind !== "globstar");
  return { segments, directoryOnly, anchored };
}

/** The same semantics as one RegExp: the reference implementation for property tests, never used on the hot path. */
export function patternRegExp(source: string): RegExp | null {
  const structure = parseStructure(source);
  if (typeof structure === "string") return null;
  const { segments, directoryOnly, anchored } = structure;
  const full = anchored || segments[0]!.kind === "globstar" ? segments : [{ kind: "globstar" } as Segment, ...segments];
  return buildRegex(full, directoryOnly);
}

/** A pattern for one exact repository path (and everything below it), for built-in non-delegable paths. */
export function literalPathPattern(path: string): CompiledPattern {
  const clean = path.replace(/^\/+/, "").replace(/\/+$/, "");
  return { source: "/" + clean, anchored: true, indexKey: { kind: "prefix", path: clean }, identity: literalIdentity(clean, true, false), test: literalTest(clean, true, false) };
}
