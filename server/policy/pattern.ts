// CODEOWNERS path patterns (DESIGN 3.2 rule 1), also used for delegation paths and guardrails (DESIGN 3.1).
//
// Why our own compiler and not picomatch: picomatch/posix would be browser-safe, but its semantics are shell globbing, not
// gitignore: it has no "a pattern without a slash matches at any depth", no "a match on a directory covers everything below",
// no "trailing slash means directory", and it supports `[ ]`, `!`, braces and extglobs that CODEOWNERS must reject. Wrapping
// it would mean rewriting every pattern first, and the index (rule-index.ts) needs the parsed structure anyway. This file turns
// a pattern into segments and one anchored RegExp, compiled lazily so parsing a 100,000-rule file stays cheap.
//
// Semantics (gitignore, with GitHub's departures marked GitHub):
// - A leading `/`, or a `/` in the middle, anchors the pattern to the repository root; otherwise it matches at any depth.
// - A trailing `/` matches directories only: something must exist below the match.
// - A pattern that matches a directory covers everything below it (`docs` owns `docs/a/b.md`).
// - `*` matches any run of characters except `/`; `?` one character except `/`; `**` as a whole segment matches any number
//   of directories (leading `**/`, middle `/**/`, trailing `/**` which needs something below).
// - GitHub: a trailing `/*` matches direct children only (gitignore would also cover what is below a matched child directory).
//   A lone `*` still matches everything, since it matches at any depth.
// - GitHub: `!` negation, `[ ]` character ranges and `\#` (escaping a leading `#`) are not supported: reported as errors.
//   We also reject `***` and empty segments (`a//b`), which have no defined meaning; an error line fails closed.
// - `\x` escapes any other character (`\*`, `\?`, `\ ` for a space); matching is case-sensitive.

type Token = { readonly kind: "literal"; readonly text: string } | { readonly kind: "star" } | { readonly kind: "one" };
type Segment = { readonly kind: "globstar" } | { readonly kind: "tokens"; readonly tokens: readonly Token[] };

/** Where the index may file a pattern so that only plausible patterns are tested for a path (see rule-index.ts). */
export type IndexKey =
  /** Anchored pattern whose leading segments are literal: candidates for paths starting with these segments. */
  | { readonly kind: "prefix"; readonly segments: readonly string[] }
  /** Matches at any depth and needs some path segment equal to this literal. */
  | { readonly kind: "segment"; readonly value: string }
  /** Matches at any depth and needs some path segment whose text after its last `.` equals this. */
  | { readonly kind: "extension"; readonly value: string }
  /** Anything else: always tested. */
  | { readonly kind: "always" };

export interface CompiledPattern {
  readonly source: string;
  readonly anchored: boolean;
  readonly indexKey: IndexKey;
  /** Does the pattern own this path (repository-relative, no leading slash, `/`-separated)? */
  test(path: string): boolean;
}

export type PatternResult = { readonly ok: true; readonly pattern: CompiledPattern } | { readonly ok: false; readonly message: string };

const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|/]/g;

function escapeRegex(text: string): string {
  return text.replace(REGEX_SYNTAX, "\\$&");
}

function splitSegments(source: string): { ok: true; raw: Token[][]; globstar: boolean[] } | { ok: false; message: string } {
  const raw: Token[][] = [[]];
  const globstar: boolean[] = [];
  const plain: string[] = [""]; // unescaped text of each segment, to recognise `**`
  let literal = "";
  const flush = () => {
    if (literal !== "") {
      raw[raw.length - 1]!.push({ kind: "literal", text: literal });
      literal = "";
    }
  };
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === undefined) return { ok: false, message: "a pattern cannot end with a backslash" };
      if (next === "#") return { ok: false, message: "escaping '#' with a backslash is not supported in CODEOWNERS" };
      literal += next;
      plain[plain.length - 1] += "\u0000"; // an escaped character is never part of `**`
      i++;
      continue;
    }
    if (ch === "[" || ch === "]") return { ok: false, message: "character ranges ('[ ]') are not supported in CODEOWNERS" };
    if (ch === "/") {
      flush();
      raw.push([]);
      plain.push("");
      continue;
    }
    plain[plain.length - 1] += ch;
    if (ch === "*") {
      flush();
      const tokens = raw[raw.length - 1]!;
      if (tokens[tokens.length - 1]?.kind !== "star") tokens.push({ kind: "star" });
    } else if (ch === "?") {
      flush();
      raw[raw.length - 1]!.push({ kind: "one" });
    } else {
      literal += ch;
    }
  }
  flush();
  for (const text of plain) {
    if (text.includes("***")) return { ok: false, message: "'***' is not a valid wildcard" };
    globstar.push(text === "**");
  }
  return { ok: true, raw, globstar };
}

function tokensRegex(tokens: readonly Token[]): string {
  if (tokens.length === 1 && tokens[0]!.kind === "star") return "[^/]+";
  let out = "";
  for (const token of tokens) {
    if (token.kind === "literal") out += escapeRegex(token.text);
    else if (token.kind === "star") out += "[^/]*";
    else out += "[^/]";
  }
  return out;
}

function literalOf(segment: Segment): string | null {
  if (segment.kind !== "tokens" || segment.tokens.length !== 1) return null;
  const only = segment.tokens[0]!;
  return only.kind === "literal" ? only.text : null;
}

function indexKeyOf(segments: readonly Segment[], anchored: boolean): IndexKey {
  if (segments[0]?.kind === "globstar") {
    const next = segments[1];
    if (next === undefined || next.kind !== "tokens") return { kind: "always" };
    const lit = literalOf(next);
    if (lit !== null) return { kind: "segment", value: lit };
    const last = next.tokens[next.tokens.length - 1]!;
    if (last.kind === "literal") {
      const dot = last.text.lastIndexOf(".");
      if (dot >= 0) return { kind: "extension", value: last.text.slice(dot + 1) };
    }
    return { kind: "always" };
  }
  if (!anchored) return { kind: "always" };
  const prefix: string[] = [];
  for (const segment of segments) {
    const lit = literalOf(segment);
    if (lit === null) break;
    prefix.push(lit);
  }
  return prefix.length > 0 ? { kind: "prefix", segments: prefix } : { kind: "always" };
}

function buildRegex(segments: readonly Segment[], directoryOnly: boolean): string {
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
    out += tokensRegex(segment.tokens);
    if (i === n - 1) {
      const loneStar = segment.tokens.length === 1 && segment.tokens[0]!.kind === "star";
      if (directoryOnly) out += "/.+";
      else if (!loneStar) out += "(?:/.+)?"; // GitHub: a trailing `/*` owns direct children only
    }
  }
  return out + "$";
}

/** Compiles one CODEOWNERS-syntax pattern, or says why it is invalid. */
export function compilePattern(source: string): PatternResult {
  if (source === "") return { ok: false, message: "empty pattern" };
  if (source.startsWith("!")) return { ok: false, message: "negation ('!') is not supported in CODEOWNERS" };
  const split = splitSegments(source);
  if (!split.ok) return split;
  const { raw, globstar } = split;
  let first = 0;
  let end = raw.length;
  const leadingSlash = raw.length > 1 && raw[0]!.length === 0 && !globstar[0];
  if (leadingSlash) first = 1;
  const directoryOnly = end - first >= 1 && raw[end - 1]!.length === 0 && !globstar[end - 1];
  if (directoryOnly) end--;
  if (end <= first) return { ok: false, message: "a pattern must name something besides '/'" };
  const segments: Segment[] = [];
  for (let i = first; i < end; i++) {
    if (globstar[i]) segments.push({ kind: "globstar" });
    else if (raw[i]!.length === 0) return { ok: false, message: "empty path segment ('//')" };
    else segments.push({ kind: "tokens", tokens: raw[i]! });
  }
  const anchored = leadingSlash || segments.length > 1;
  if (!anchored && segments[0]!.kind !== "globstar") segments.unshift({ kind: "globstar" });
  const regexSource = buildRegex(segments, directoryOnly && segments[segments.length - 1]!.kind !== "globstar");
  let regex: RegExp | null = null;
  return {
    ok: true,
    pattern: {
      source,
      anchored,
      indexKey: indexKeyOf(segments, anchored),
      test(path: string): boolean {
        regex ??= new RegExp(regexSource, "u");
        return regex.test(path);
      },
    },
  };
}

/** A pattern for one exact repository path (and everything below it), for built-in non-delegable paths. */
export function literalPathPattern(path: string): CompiledPattern {
  const clean = path.replace(/^\/+/, "").replace(/\/+$/, "");
  const below = clean + "/";
  return {
    source: "/" + clean,
    anchored: true,
    indexKey: { kind: "prefix", segments: clean.split("/") },
    test: (candidate: string) => candidate === clean || candidate.startsWith(below),
  };
}
