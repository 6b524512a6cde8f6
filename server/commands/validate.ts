// `service validate [DIR]` (issue 19 item 1): checks a repository's CODEOWNERS and policy files offline, as the service would
// judge them, before they merge. Needs no settings, database or forge. It reads the files (this module) and hands them to the
// pure validator (server/policy/validate.ts), which uses the service's parsers and matcher.
//
// Exit codes: 0 no error (warnings and notices allowed), 1 at least one error, or with --strict at least one warning,
// 2 usage (unknown flag, missing file, bad format value; the message on stderr).
//
// --format json prints one object (stable; documented in docs/policy.md "service validate in CI"):
//   { "format": "service-validate", "version": 1, "exitCode": 0|1,
//     "findings": [{ "kind", "severity": "error"|"warning"|"notice", "file": path|null, "line": n|null, "message" }],
//     "summary": { "errors", "warnings", "notices", "codeowners": path|null, "rules": n|null, "paths": n|null,
//                  "unownedPaths": n|null, "matchSteps" } }
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readSync, statSync, type Stats } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { visible, visibleJson } from "../evaluation/escape.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { codeownersLocations, DEFAULT_FORGE_DIRECTORY, defaultPolicyPath, forgeDirectoryProblem } from "../policy/forge-directory.ts";
import { decodeUtf8Strict } from "../policy/utf8.ts";
import { validate, type Finding, type ValidatedFile, type ValidationReport } from "../policy/validate.ts";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type ExitCodes, exitCodesLine } from "./exit-codes.ts";

export const VALIDATE_EXIT_CODES: ExitCodes = [[0, "no error"], [1, "errors (with --strict, warnings too)"], [2, "usage"]];

export const VALIDATE_USAGE = `usage: service validate [DIR] [--policy FILE] [--organization-policy FILE] [--files-from FILE|-]
                        [--forge-directory NAME] [--format text|json|github] [--strict]

Checks the CODEOWNERS file the service would read in DIR (default: the current directory; NAME/CODEOWNERS, then
CODEOWNERS, then docs/CODEOWNERS) and the repository policy (NAME/service-policy.toml, or --policy FILE) with the service's
own parsers, offline. --forge-directory NAME is the service's SERVICE_FORGE_DIRECTORY (default ${DEFAULT_FORGE_DIRECTORY};
.github on GitHub). --organization-policy FILE also checks the organization policy and the delegations against it.
--files-from reads the tree's paths, one per line or NUL-separated (\`git ls-files\`; - for stdin) and adds the tree
checks: rules that own nothing, dead rules, unowned paths.

${exitCodesLine(VALIDATE_EXIT_CODES)}`;

export const VALIDATE_FORMAT = "service-validate";

export interface ValidateOutput {
  stdout(line: string): void;
  stderr(line: string): void;
}

type Format = "text" | "json" | "github";

interface ValidateArgs {
  dir: string;
  policy: string | null;
  organizationPolicy: string | null;
  filesFrom: string | null;
  forgeDirectory: string;
  format: Format;
  strict: boolean;
}

export function parseValidateArgs(args: readonly string[]): ValidateArgs | string {
  const parsed: ValidateArgs = { dir: ".", policy: null, organizationPolicy: null, filesFrom: null, forgeDirectory: DEFAULT_FORGE_DIRECTORY, format: "text", strict: false };
  let dir: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = (): string | null => {
      const next = inline ?? args[++i];
      return next === undefined || next === "" ? null : next;
    };
    if (flag === "--strict" && inline === undefined) parsed.strict = true;
    else if (flag === "--forge-directory") {
      // Read raw: an empty value is an error here (as SERVICE_FORGE_DIRECTORY's), not "needs a value".
      const given = inline ?? args[++i];
      if (given === undefined) return `${flag} needs a value`;
      const problem = forgeDirectoryProblem(given);
      if (problem !== null) return `${flag} ${problem} (a single directory name such as .forge or .github)`;
      parsed.forgeDirectory = given;
    } else if (flag === "--policy" || flag === "--organization-policy" || flag === "--files-from" || flag === "--format") {
      const given = value();
      if (given === null) return `${flag} needs a value`;
      if (flag === "--policy") parsed.policy = given;
      else if (flag === "--organization-policy") parsed.organizationPolicy = given;
      else if (flag === "--files-from") parsed.filesFrom = given;
      else if (given === "text" || given === "json" || given === "github") parsed.format = given;
      else return `--format must be text, json or github, not '${given}'`;
    } else if (arg.startsWith("-")) return `unknown argument: ${arg}`;
    else if (dir !== null) return `only one directory may be given (got '${dir}' and '${arg}')`;
    else dir = arg;
  }
  if (dir !== null) parsed.dir = dir;
  return parsed;
}

/** Size of a regular file, null when there is none at `path`. */
function fileSize(path: string): number | null {
  try {
    const stat = statSync(path);
    return stat.isFile() ? stat.size : null;
  } catch {
    return null;
  }
}

// Reading (issue 25 item 3). The checkout is the pull request's: a file found inside DIR is read only when every component of
// its path is a directory and the file itself a regular file, never through a symbolic link (`CODEOWNERS -> /proc/self/environ`
// or `.forge -> /home/runner` would make CI print another file's lines as findings and annotations) and never a FIFO or
// device (which could hang the job or never end). Links are refused even when they stay inside DIR: the checkout can hold
// files git never tracked (`.env`). A directory at a location is no file, as the forge reader treats it. Files named on the
// command line (--policy, --organization-policy, --files-from) are the operator's choice and are followed. Every read stops
// at the bound + 1 byte whatever stat says (/proc files say 0), and decodes as the service's forge reader does.

/** O_NONBLOCK: opening a FIFO swapped in after the checks returns at once instead of waiting for a writer. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? "error";

function notRegular(stat: Stats): string {
  const what = stat.isFIFO() ? "a FIFO" : stat.isSocket() ? "a socket" : stat.isCharacterDevice() || stat.isBlockDevice() ? "a device" : "not a file";
  return `is not a regular file (${what}): service validate reads only regular files inside the checkout`;
}

/** An open regular file: its text; only its size past `maxBytes`; or unreadable when it is not UTF-8 (as the service). */
function readOpened(fd: number, shownAs: string, statSize: number, maxBytes: number): ValidatedFile {
  const buffer = Buffer.allocUnsafe(maxBytes + 1);
  let length = 0;
  while (length < buffer.length) {
    const read = readSync(fd, buffer, length, buffer.length - length, null);
    if (read === 0) break;
    length += read;
  }
  // Past the bound the size is at least what was read (stat may understate it); the content is not looked at.
  if (length > maxBytes) return { path: shownAs, bytes: Math.max(statSize, length) };
  const text = decodeUtf8Strict(buffer.subarray(0, length));
  return text === null ? { path: shownAs, unreadable: `${shownAs} is not valid UTF-8: the service fails closed on it` } : { path: shownAs, text };
}

function readFd(open: () => number, shownAs: string, maxBytes: number): ValidatedFile {
  let fd: number;
  try {
    fd = open();
  } catch (error) {
    const code = errorCode(error);
    // ELOOP: a link swapped in after the checks (O_NOFOLLOW).
    return { path: shownAs, unreadable: code === "ELOOP" ? `${shownAs} is a symbolic link: service validate follows no link inside the checkout` : `${shownAs} could not be read (${code})` };
  }
  try {
    const stat = fstatSync(fd);
    return stat.isFile() ? readOpened(fd, shownAs, stat.size, maxBytes) : { path: shownAs, unreadable: `${shownAs} ${notRegular(stat)}` };
  } finally {
    closeSync(fd);
  }
}

/** The file at repository path `location` inside `dir`, at most `maxBytes` of it; null when there is no file there. */
function readInCheckout(dir: string, location: string, maxBytes: number): ValidatedFile | null {
  const parts = location.split("/");
  let path = dir;
  for (let i = 0; i < parts.length; i++) {
    path = join(path, parts[i]!);
    const name = parts.slice(0, i + 1).join("/");
    let stat: Stats;
    try {
      stat = lstatSync(path);
    } catch (error) {
      const code = errorCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      return { path: location, unreadable: `${name} could not be read (${code})` };
    }
    if (stat.isSymbolicLink()) {
      return { path: location, unreadable: `${name} is a symbolic link: service validate follows no link inside the checkout, so it cannot tell what the service would read at ${location}` };
    }
    const last = i === parts.length - 1;
    if (stat.isDirectory()) {
      if (last) return null;
    } else if (!last) return null;
    else if (!stat.isFile()) return { path: location, unreadable: `${location} ${notRegular(stat)}` };
  }
  return readFd(() => openSync(path, OPEN_FLAGS | constants.O_NOFOLLOW), location, maxBytes);
}

/** A file named on the command line (the operator's choice: links followed), at most `maxBytes` of it. */
function readNamed(path: string, maxBytes: number): ValidatedFile {
  return readFd(() => openSync(path, OPEN_FLAGS), path, maxBytes);
}

/** `path` relative to `dir` when it lies inside it (as the forge names it), otherwise as given. */
function repositoryPath(dir: string, path: string): string | null {
  const inside = relative(dir, resolve(path));
  return inside === "" || inside.startsWith("..") || isAbsolute(inside) ? null : inside.split(sep).join("/");
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/**
 * A path as `git ls-files` prints it: with core.quotePath (the default) a path with unusual or non-ASCII bytes comes in
 * double quotes with C escapes and octal bytes (`"caf\303\251.md"`). Decoded here because git offers no library form to a
 * Bun program and the rule is small: anything else is taken literally.
 */
export function unquoteGitPath(line: string): string {
  if (line.length < 2 || !line.startsWith('"') || !line.endsWith('"')) return line;
  const bytes: number[] = [];
  const body = line.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch !== "\\") {
      bytes.push(...new TextEncoder().encode(ch));
      continue;
    }
    const next = body[i + 1] ?? "";
    const octal = /^[0-7]{3}/.exec(body.slice(i + 1, i + 4));
    if (octal !== null) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else if (next in C_ESCAPES) {
      bytes.push(C_ESCAPES[next]!);
      i++;
    } else return line; // not git's quoting after all
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Tree paths: NUL-separated (`git ls-files -z`) when the list has a NUL, otherwise one per line (git's quoting undone). */
export function treePaths(text: string): string[] {
  if (text.includes("\0")) return text.split("\0").filter((path) => path !== "");
  return text.split("\n").filter((line) => line !== "").map(unquoteGitPath);
}

// GitHub workflow commands (`::error file=…,line=…::message`): the escaping of actions/toolkit's core command.ts
// (escapeData, escapeProperty), written out rather than
// adding @actions/core for two one-line functions.
const escapeData = (value: string) => value.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
const escapeProperty = (value: string) => escapeData(value).replace(/:/g, "%3A").replace(/,/g, "%2C");

// The Actions runner acts on two shapes in any line of a step's output (actions/runner, ActionCommand.cs): a workflow command
// `::name …::data` when the line starts with `::` after white space (TryParseV2), and a legacy command `##[name …]data` wherever
// `##[` appears in the line (TryParse): `##[add-mask]`, `##[set-output …]`, `##[stop-commands]`, `##[error]`. File names and
// CODEOWNERS tokens come from the pull request (issue 25 item 4), so every line printed goes through one of these: the `[` of
// `##[` and the first `:` of a line-leading `::` become `\u{…}` escapes, written as visible() writes invisible characters.
// They run after visible(), which also takes out the ignorable characters the runner's culture-aware IndexOf would skip over
// (`##\u200B[`). Hand-written: @actions/core escapes a command's own data and properties, not text that is not a command.
const LEGACY_COMMAND = /##\[/g;
const withoutLegacyCommand = (line: string) => line.replace(LEGACY_COMMAND, "##\\u{005B}");

/** A line of text output the runner takes as no command. */
export function runnerSafe(line: string): string {
  return withoutLegacyCommand(line).replace(/^([\s\u0085]*):(?=:)/, "$1\\u{003A}");
}

/**
 * JSON text the runner takes as no command: `##[` can only stand inside a string, where `\u005B` parses back to `[`; no line
 * of JSON.stringify's indented output starts with `:`.
 */
function runnerSafeJson(json: string): string {
  return json.replace(LEGACY_COMMAND, "##\\u005B");
}

/** One workflow command; it starts with its own `::`, and the data the runner takes whole has no legacy command in it. */
export function githubAnnotation(finding: Finding): string {
  const properties: string[] = [];
  if (finding.file !== null) properties.push(`file=${escapeProperty(visible(finding.file))}`);
  if (finding.line !== null) properties.push(`line=${finding.line}`);
  properties.push(`title=${escapeProperty(finding.kind)}`);
  return withoutLegacyCommand(`::${finding.severity} ${properties.join(",")}::${escapeData(visible(finding.message))}`);
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function summaryLine(report: ValidationReport): string {
  const s = report.summary;
  const counts = `${plural(s.errors, "error")}, ${plural(s.warnings, "warning")}, ${plural(s.notices, "notice")}`;
  const what = [
    s.codeowners === null ? "no code-owners file" : `${s.codeowners}: ${plural(s.rules ?? 0, "rule")}`,
    ...(s.paths === null ? [] : [`${plural(s.paths, "path")} checked${s.unownedPaths === null ? "" : `, ${s.unownedPaths} unowned`}`]),
  ];
  return `${counts} (${what.join("; ")})`;
}

function textLines(report: ValidationReport): string[] {
  const lines: string[] = [];
  let file: string | null | undefined;
  for (const finding of report.findings) {
    if (finding.file !== file) {
      file = finding.file;
      lines.push(file === null ? "(repository)" : file);
    }
    const at = finding.line === null ? "" : `line ${finding.line}: `;
    lines.push(`  ${at}${finding.severity}: ${finding.message} [${finding.kind}]`);
  }
  lines.push(summaryLine(report));
  return lines;
}

export interface ValidateDeps {
  /** Standard input as text (`--files-from -`); injected in tests. */
  readonly stdin?: () => Promise<string>;
}

export async function runValidate(args: readonly string[], rawOut: ValidateOutput, deps: ValidateDeps = {}): Promise<number> {
  const out = { stdout: (line: string) => rawOut.stdout(runnerSafe(visible(line))), stderr: (line: string) => rawOut.stderr(runnerSafe(visible(line))) };
  if (args.includes("--help") || args.includes("-h")) {
    for (const line of VALIDATE_USAGE.split("\n")) out.stdout(line);
    return EXIT_OK;
  }
  const parsed = parseValidateArgs(args);
  const usage = (message: string) => {
    for (const line of [message, "", ...VALIDATE_USAGE.split("\n")]) out.stderr(line);
    return EXIT_USAGE;
  };
  if (typeof parsed === "string") return usage(parsed);
  const dir = resolve(parsed.dir);
  try {
    if (!statSync(dir).isDirectory()) return usage(`not a directory: ${parsed.dir}`);
  } catch {
    return usage(`no such directory: ${parsed.dir}`);
  }
  for (const [flag, path] of [["--policy", parsed.policy], ["--organization-policy", parsed.organizationPolicy], ["--files-from", parsed.filesFrom]] as const) {
    if (path !== null && path !== "-" && fileSize(path) === null) return usage(`${flag}: no such file: ${path}`);
  }
  if (parsed.policy === "-" || parsed.organizationPolicy === "-") return usage("only --files-from reads standard input");

  // The service's precedence (codeownersLocations, as analyze.ts and the forge reader walk it): the first existing file wins.
  // The byte bounds are the forge reader's (server/forge/evidence.ts): CODEOWNERS under MAX_CODEOWNERS_BYTES, policies at most
  // MAX_POLICY_FILE_BYTES.
  const locations = codeownersLocations(parsed.forgeDirectory);
  const servicePolicyPath = defaultPolicyPath(parsed.forgeDirectory);
  const codeowners: ValidatedFile[] = [];
  for (const location of locations) {
    const file = readInCheckout(dir, location, MAX_CODEOWNERS_BYTES - 1);
    if (file !== null) codeowners.push(file);
  }
  // --policy inside DIR is that repository path (and non-delegable as such); outside it, the default path stays protected.
  const policyInRepository = parsed.policy === null ? servicePolicyPath : repositoryPath(dir, parsed.policy);
  const policyPath = policyInRepository ?? servicePolicyPath;
  const named = (path: string, shownAs: string): ValidatedFile => ({ ...readNamed(path, MAX_POLICY_FILE_BYTES), path: shownAs });
  const repositoryPolicy = parsed.policy === null ? readInCheckout(dir, servicePolicyPath, MAX_POLICY_FILE_BYTES) : named(parsed.policy, policyInRepository ?? parsed.policy);
  const organizationPolicy = parsed.organizationPolicy === null ? null : readNamed(parsed.organizationPolicy, MAX_POLICY_FILE_BYTES);
  const stdin = deps.stdin ?? (() => new Response(Bun.stdin.stream()).text());
  const tree = parsed.filesFrom === null ? null : treePaths(parsed.filesFrom === "-" ? await stdin() : readFileSync(parsed.filesFrom, "utf8"));

  const report = validate({ codeowners, codeownersLocations: locations, forgeDirectory: parsed.forgeDirectory, repositoryPolicy, organizationPolicy, policyPath, tree });
  const failed = report.summary.errors > 0 || (parsed.strict && report.summary.warnings > 0);
  const exitCode = failed ? EXIT_FAILURE : EXIT_OK;
  if (parsed.format === "json") {
    rawOut.stdout(runnerSafeJson(visibleJson(JSON.stringify({ format: VALIDATE_FORMAT, version: 1, exitCode, findings: report.findings, summary: report.summary }, null, 2))));
  } else if (parsed.format === "github") {
    for (const finding of report.findings) rawOut.stdout(githubAnnotation(finding));
    out.stdout(summaryLine(report));
  } else for (const line of textLines(report)) out.stdout(line);
  return exitCode;
}
