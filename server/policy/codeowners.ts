// CODEOWNERS parsing and matching with the forge's semantics (DESIGN 3.2 rule 1; pattern rules in pattern.ts).
//
// Line syntax: `<pattern> [owner ...] [# comment]`, separated by spaces or tabs.
// - Blank lines and lines starting with `#` are ignored. A token starting with `#` starts an inline comment.
//   A `#` inside a token is rejected: the forge would start a comment there while gitignore would read it literally, and
//   silently dropping part of a pattern or an owner could remove a requirement (fail closed instead).
// - Owners are `@user`, `@org/team` or an email address, no longer than the forge allows (DESIGN 3.6: logins 39 characters,
//   team slugs 255, e-mail addresses 254); anything else makes the line invalid. Messages quote at most
//   MAX_QUOTED_TOKEN_CHARS of a token, so an error costs the same whatever the line's length.
// - A pattern without owners is valid: matching paths become unowned (`owners: []`).
// - As on the forge, an invalid line is skipped by `match` and listed in `errors`; evaluate() then fails closed naming the lines.
// - Last matching rule wins. Only the first MAX_CODEOWNERS_RULES rules are kept; beyond that an error is reported.
import { MAX_CODEOWNERS_RULES, MAX_EMAIL_CHARS, MAX_LOGIN_CHARS, MAX_TEAM_SLUG_CHARS } from "./bounds.ts";
import { PARSE_CHARS_PER_STEP, RULE_PARSE_STEPS, type MatchBudget } from "./match-budget.ts";
import { compilePattern, type CompiledPattern } from "./pattern.ts";
import { PatternIndex } from "./rule-index.ts";

export interface CodeownersError {
  readonly line: number;
  readonly message: string;
}

export interface CodeownersRule {
  readonly line: number;
  readonly pattern: string;
  readonly owners: readonly string[];
}

export interface CodeownersMatch {
  readonly owners: string[];
  readonly line: number;
}

export interface ParsedCodeowners {
  /** Valid rules in file order. */
  readonly rules: readonly CodeownersRule[];
  /** Invalid lines (skipped by `match`). Non-empty means evaluation fails closed. */
  readonly errors: readonly CodeownersError[];
  /**
   * The last valid rule matching `path` (repository-relative, e.g. `src/a.js`), or null when none matches. The matching
   * work is spent from `budget` when one is given (MatchBudgetExceeded past its limit).
   */
  match(path: string, budget?: MatchBudget): CodeownersMatch | null;
  /** Same answer by a reverse scan over every rule: the benchmark's baseline and the tests' reference. */
  matchNaive(path: string): CodeownersMatch | null;
}

export type OwnerKind = "user" | "team" | "email";

const USER_OWNER = new RegExp(`^@[A-Za-z0-9_-]{1,${MAX_LOGIN_CHARS}}$`);
const TEAM_OWNER = new RegExp(`^@[A-Za-z0-9-]{1,${MAX_LOGIN_CHARS}}/[A-Za-z0-9_-]{1,${MAX_TEAM_SLUG_CHARS}}$`);
const EMAIL_OWNER = /^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,63}$/;
/** The longest token any owner form allows (`@org/team`): longer ones are rejected before any pattern reads them. */
const MAX_OWNER_TOKEN_CHARS = Math.max(1 + MAX_LOGIN_CHARS + 1 + MAX_TEAM_SLUG_CHARS, MAX_EMAIL_CHARS);

/** Classifies an owner token, or null when it is not valid owner syntax or longer than the forge allows. */
export function ownerKind(owner: string): OwnerKind | null {
  if (owner.length > MAX_OWNER_TOKEN_CHARS) return null;
  if (TEAM_OWNER.test(owner)) return "team";
  if (USER_OWNER.test(owner)) return "user";
  if (owner.length <= MAX_EMAIL_CHARS && EMAIL_OWNER.test(owner)) return "email";
  return null;
}

/** Characters of a token an error message quotes; a longer token is quoted by its start and its length. */
export const MAX_QUOTED_TOKEN_CHARS = 60;

/** `'token'`, or for a long token `'start…' (N characters)`: messages stay short whatever the file holds. */
export function quoteToken(token: string): string {
  if (token.length <= MAX_QUOTED_TOKEN_CHARS) return `'${token}'`;
  let end = MAX_QUOTED_TOKEN_CHARS;
  const last = token.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // never split a surrogate pair
  return `'${token.slice(0, end)}…' (${token.length} characters)`;
}

const isBlank = (ch: string) => ch === " " || ch === "\t" || ch === "\f" || ch === "\v" || ch === "\r";

const BLANKS = /[ \t\f\v\r]+/;

/** Splits a line into whitespace-separated tokens; a backslash keeps the next character (an escaped space) in the token. */
function tokenize(line: string): string[] {
  if (!line.includes("\\")) {
    const tokens = line.split(BLANKS);
    if (tokens[0] === "") tokens.shift();
    if (tokens[tokens.length - 1] === "") tokens.pop();
    return tokens;
  }
  const tokens: string[] = [];
  let current = "";
  let inToken = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === "\\" && i + 1 < line.length) {
      current += ch + line[i + 1];
      inToken = true;
      i++;
    } else if (isBlank(ch)) {
      if (inToken) tokens.push(current);
      current = "";
      inToken = false;
    } else {
      current += ch;
      inToken = true;
    }
  }
  if (inToken) tokens.push(current);
  return tokens;
}

type LineResult = { kind: "skip" } | { kind: "rule"; pattern: CompiledPattern; owners: string[] } | { kind: "error"; message: string };

function parseLine(line: string, validOwners: Map<string, boolean>): LineResult {
  const tokens = tokenize(line);
  const [patternToken, ...rest] = tokens;
  if (patternToken === undefined || patternToken.startsWith("#")) return { kind: "skip" };
  if (patternToken.includes("#") && /(^|[^\\])#/.test(patternToken)) return { kind: "error", message: `'#' inside the pattern ${quoteToken(patternToken)}` };
  const compiled = compilePattern(patternToken);
  if (!compiled.ok) return { kind: "error", message: compiled.message };
  const owners: string[] = [];
  for (const token of rest) {
    if (token.startsWith("#")) break;
    let valid = validOwners.get(token);
    if (valid === undefined) {
      valid = ownerKind(token) !== null;
      validOwners.set(token, valid);
    }
    if (!valid) return { kind: "error", message: `invalid owner ${quoteToken(token)}` };
    owners.push(token);
  }
  return { kind: "rule", pattern: compiled.pattern, owners };
}

/** The error at the first rule past MAX_CODEOWNERS_RULES (the validator reports it as a bound). */
export const TOO_MANY_RULES_MESSAGE = `more than ${MAX_CODEOWNERS_RULES} rules; the rest of the file is not loaded`;

/**
 * `budget`, when given, is charged for the parse as it goes (issue 25 item 5): the file's size before it is split, then each
 * rule or invalid line by its length (match-budget.ts prices both); MatchBudgetExceeded stops the parse past its limit.
 */
export function parseCodeowners(text: string, budget?: MatchBudget): ParsedCodeowners {
  const rules: CodeownersRule[] = [];
  const patterns: CompiledPattern[] = [];
  const errors: CodeownersError[] = [];
  budget?.spend(Math.ceil(text.length / PARSE_CHARS_PER_STEP));
  const lines = text.split("\n");
  if (lines[0]?.startsWith("\uFEFF")) lines[0] = lines[0].slice(1);
  const validOwners = new Map<string, boolean>();
  for (let index = 0; index < lines.length; index++) {
    const result = parseLine(lines[index]!, validOwners);
    if (result.kind === "skip") continue;
    budget?.spend(RULE_PARSE_STEPS + lines[index]!.length);
    const line = index + 1;
    if (result.kind === "error") {
      errors.push({ line, message: result.message });
      continue;
    }
    if (rules.length >= MAX_CODEOWNERS_RULES) {
      errors.push({ line, message: TOO_MANY_RULES_MESSAGE });
      break;
    }
    rules.push({ line, pattern: result.pattern.source, owners: result.owners });
    patterns.push(result.pattern);
  }
  const index = new PatternIndex(patterns);
  const answer = (position: number): CodeownersMatch | null => {
    if (position < 0) return null;
    const rule = rules[position]!;
    return { owners: [...rule.owners], line: rule.line };
  };
  // Paths are repository-relative without a leading slash (`src/a.js`), as the forge lists them; they are not rewritten, so
  // `/docs/a.md` is not `docs/a.md` (other implementations agree).
  return {
    rules,
    errors,
    match: (path, budget) => answer(index.lastMatch(path, budget)),
    matchNaive: (path) => answer(index.lastMatchNaive(path)),
  };
}
