// The playground's whole state: the very Evidence the worker would gather plus the process settings evaluate() reads.
// Keeping the engine's own types as the state means an imported `service explain --json` document is replayed exactly, and
// every editor is a view over one field of the evidence.
import {
  codeownersLocations,
  DEFAULT_EVALUATION_SETTINGS,
  type ChangedFile,
  type CodeownersEvidence,
  type CodeownersLocation,
  type EvaluationSettings,
  type Evidence,
  type FileRead,
  type Lookup,
} from "../../server/evaluation/evidence.ts";
import { defaultPolicyPath } from "../../server/policy/forge-directory.ts";

export const STATE_VERSION = 1;

export interface PlaygroundState {
  readonly version: typeof STATE_VERSION;
  readonly evidence: Evidence;
  readonly settings: EvaluationSettings;
}

export const DEFAULT_SETTINGS: EvaluationSettings = DEFAULT_EVALUATION_SETTINGS;

export const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

export const foundFile = (path: string, text: string): FileRead => ({ kind: "found", path, text, bytes: utf8Bytes(text) });

/** The code-owners file the evidence holds under `forgeDirectory`: its location and text, or null when every location is missing. */
export function codeownersFile(evidence: Evidence, forgeDirectory: string): { location: CodeownersLocation; read: FileRead } | null {
  return codeownersIn(evidence.codeowners, forgeDirectory);
}

/** The code-owners file in force among `codeowners` (the first location of `forgeDirectory`'s not missing), or null. */
export function codeownersIn(codeowners: CodeownersEvidence, forgeDirectory: string): { location: CodeownersLocation; read: FileRead } | null {
  for (const location of codeownersLocations(forgeDirectory)) {
    const read = codeowners[location];
    if (read === undefined) return null;
    if (read.kind !== "missing") return { location, read };
  }
  return null;
}

/** `text` at `location`: the earlier locations read as missing (precedence, DESIGN 3.2 rule 1), later ones are unread. */
export function codeownersAt(location: CodeownersLocation | null, text: string, forgeDirectory: string): CodeownersEvidence {
  const codeowners: Record<CodeownersLocation, FileRead> = {};
  for (const candidate of codeownersLocations(forgeDirectory)) {
    if (candidate === location) {
      codeowners[candidate] = foundFile(candidate, text);
      break;
    }
    codeowners[candidate] = { kind: "missing" };
  }
  return codeowners;
}

/** Puts `text` at `location` in the base's code-owners evidence (the file the decision uses). */
export function withCodeownersAt(evidence: Evidence, location: CodeownersLocation | null, text: string, forgeDirectory: string): Evidence {
  return { ...evidence, codeowners: codeownersAt(location, text, forgeDirectory) };
}

// The change preview (issue 19 item 3): `evidence.headFiles` holds the policy files as the pull request's head has them, as
// in an evidence document of `service explain --json`. Only the preview reads it; the decision keeps using the base files.
// The playground edits the head's code-owners file; the head's repository policy is the base's unless a document says
// otherwise, and follows edits of the base's policy while the two are the same (the pull request does not change it).

/** Starts the preview with the head's files as the base has them (a pull request that changes no policy file yet). */
export function withChangePreview(evidence: Evidence): Evidence {
  return { ...evidence, headFiles: { codeowners: evidence.codeowners, repositoryPolicy: evidence.repositoryPolicy } };
}

export function withoutChangePreview(evidence: Evidence): Evidence {
  const { headFiles: _, ...rest } = evidence;
  return rest;
}

/** Puts `text` at `location` in the head's code-owners evidence; the evidence must hold head files (withChangePreview). */
export function withHeadCodeownersAt(evidence: Evidence, location: CodeownersLocation | null, text: string, forgeDirectory: string): Evidence {
  const head = evidence.headFiles ?? { repositoryPolicy: evidence.repositoryPolicy };
  return { ...evidence, headFiles: { ...head, codeowners: codeownersAt(location, text, forgeDirectory) } };
}

const sameRead = (a: FileRead, b: FileRead) => JSON.stringify(a) === JSON.stringify(b);

/** Sets the base's repository policy; the head's follows while it equals the base's (the pull request leaves it alone). */
export function withRepositoryPolicy(evidence: Evidence, read: FileRead): Evidence {
  const head = evidence.headFiles;
  const follows = head !== undefined && sameRead(head.repositoryPolicy, evidence.repositoryPolicy);
  return { ...evidence, repositoryPolicy: read, ...(follows ? { headFiles: { ...head, repositoryPolicy: read } } : {}) };
}

export const fileText = (read: FileRead): string => (read.kind === "found" ? read.text : "");

// Changed files as text, one per line: `<status> <path>` or `<status> <old path> -> <new path>` (renamed, copied).
const STATUSES = new Set(["added", "removed", "modified", "renamed", "copied", "changed", "unchanged"]);
const ARROW = " -> ";

export function formatFiles(files: readonly ChangedFile[]): string {
  return files
    .map((file) =>
      typeof file.previousFilename === "string" && file.previousFilename !== ""
        ? `${file.status} ${file.previousFilename}${ARROW}${file.filename}`
        : `${file.status} ${file.filename}`,
    )
    .join("\n");
}

/** Parses the changed-files text. A line without a known status word is taken as a path with status `modified`. */
export function parseFiles(text: string): ChangedFile[] {
  const files: ChangedFile[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const space = line.indexOf(" ");
    const word = space > 0 ? line.slice(0, space) : "";
    const status = STATUSES.has(word) ? word : "modified";
    const rest = STATUSES.has(word) ? line.slice(space + 1).trim() : line;
    const arrow = rest.indexOf(ARROW);
    if (arrow >= 0) files.push({ status, previousFilename: rest.slice(0, arrow).trim(), filename: rest.slice(arrow + ARROW.length).trim() });
    else if (status === "renamed" || status === "copied") files.push({ status, filename: rest, previousFilename: null });
    else files.push({ status, filename: rest });
  }
  return files;
}

// Directory records are keyed by logins, teams and slugs, which are hostile text: `__proto__`, `constructor` (issue 16 item 7).
// `record[key]` would read an inherited Object.prototype member for a key the record lacks, and `record[key] = value` with
// `__proto__` would set the prototype instead of adding an entry. So the playground reads them with ownEntry() and builds them
// with Object.fromEntries, which defines own properties for any key (as JSON.parse does for a link).

/** The record's own entry for `key`, never an inherited member. */
export function ownEntry<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A copy of `record` with `key` set to `value` in place (appended when new), or removed when `value` is undefined. */
export function withEntry<T>(record: Readonly<Record<string, T>>, key: string, value: T | undefined): Record<string, T> {
  const entries = Object.entries(record);
  const at = entries.findIndex(([name]) => name === key);
  if (value === undefined) {
    if (at >= 0) entries.splice(at, 1);
  } else if (at >= 0) entries[at] = [key, value];
  else entries.push([key, value]);
  return Object.fromEntries(entries);
}

/** A lookup as one word for the editors: the found value, `404` or `incomplete`. */
export function lookupWord<T>(lookup: Lookup<T> | undefined, value: (found: T) => string): string {
  if (lookup === undefined) return "";
  if (lookup.kind === "not_found") return "404";
  if (lookup.kind === "incomplete") return "incomplete";
  return value(lookup.value);
}

export function lookupFromWord<T>(word: string, value: (word: string) => T): Lookup<T> | undefined {
  if (word === "") return undefined;
  if (word === "404") return { kind: "not_found" };
  if (word === "incomplete") return { kind: "incomplete", cause: "transient", detail: "marked incomplete in the playground" };
  return { kind: "found", value: value(word) };
}

/** Membership text `bob, dave:pending, carol:404` ⇄ a record of lookups (a bare login is an active member). */
export function formatMemberships(memberships: Readonly<Record<string, Lookup<{ readonly state: string }>>>): string {
  return Object.entries(memberships)
    .map(([login, lookup]) => {
      const word = lookupWord(lookup, (value) => value.state);
      return word === "active" ? login : `${login}:${word}`;
    })
    .join(", ");
}

export function parseMemberships(text: string): Record<string, Lookup<{ readonly state: string }>> {
  const entries: [string, Lookup<{ readonly state: string }>][] = [];
  for (const token of text.split(/[\s,]+/)) {
    if (token === "") continue;
    const colon = token.indexOf(":");
    const login = colon >= 0 ? token.slice(0, colon) : token;
    const word = colon >= 0 ? token.slice(colon + 1) : "active";
    const lookup = lookupFromWord(word || "active", (state) => ({ state }));
    if (login !== "" && lookup !== undefined) entries.push([login, lookup]);
  }
  return Object.fromEntries(entries);
}

const movedRead = (read: FileRead, from: string, to: string): FileRead =>
  (read.kind === "found" || read.kind === "too_large") && read.path === from ? { ...read, path: to } : read;

/** The code-owners reads with the first location moved from `from`'s to `to`'s (the file read there goes with it). */
function movedCodeowners(codeowners: CodeownersEvidence, from: string, to: string): CodeownersEvidence {
  const [oldFirst] = codeownersLocations(from);
  const [newFirst] = codeownersLocations(to);
  const moved: Record<CodeownersLocation, FileRead> = {};
  for (const [location, read] of Object.entries(codeowners)) {
    if (location === oldFirst) moved[newFirst!] = movedRead(read, oldFirst, newFirst!);
    else if (location !== newFirst) moved[location] = read;
  }
  return moved;
}

/**
 * Switches the forge directory as the service's SERVICE_FORGE_DIRECTORY would: the file read at the old directory's
 * CODEOWNERS is now read at the new one's, and a policy path that was the old directory's default becomes the new one's
 * (the repository and organization policies read there move with it). `forgeDirectory` must be valid (forgeDirectoryProblem).
 */
export function withForgeDirectory(state: PlaygroundState, forgeDirectory: string): PlaygroundState {
  const from = state.settings.forgeDirectory;
  if (from === forgeDirectory) return state;
  const oldPolicy = state.settings.policyPath;
  const policyPath = oldPolicy === defaultPolicyPath(from) ? defaultPolicyPath(forgeDirectory) : oldPolicy;
  const policy = (read: FileRead) => movedRead(read, oldPolicy, policyPath);
  const e = state.evidence;
  const evidence: Evidence = {
    ...e,
    codeowners: movedCodeowners(e.codeowners, from, forgeDirectory),
    repositoryPolicy: policy(e.repositoryPolicy),
    organizationPolicy: policy(e.organizationPolicy),
    ...(e.headFiles ? { headFiles: { codeowners: movedCodeowners(e.headFiles.codeowners, from, forgeDirectory), repositoryPolicy: policy(e.headFiles.repositoryPolicy) } } : {}),
  };
  return { ...state, evidence, settings: { ...state.settings, forgeDirectory, policyPath } };
}

export function withSettings(state: PlaygroundState, settings: Partial<EvaluationSettings>): PlaygroundState {
  return { ...state, settings: { ...state.settings, ...settings } };
}

export function withEvidence(state: PlaygroundState, update: (evidence: Evidence) => Evidence): PlaygroundState {
  return { ...state, evidence: update(state.evidence) };
}
