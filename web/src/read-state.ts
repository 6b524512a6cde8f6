// Reads untrusted input (a URL fragment, a pasted or picked file) into a PlaygroundState, checking every field evaluate()
// reads so that a damaged link or document is refused with a message instead of crashing the page.
// Accepted: a playground state, an evidence document printed by `service explain --json`, or a bare Evidence object.
import { codeownersLocations, DEFAULT_EVALUATION_SETTINGS, type EvaluationSettings, type Evidence } from "../../server/evaluation/evidence.ts";
import { DEFAULT_FORGE_DIRECTORY, forgeDirectoryProblem } from "../../server/policy/forge-directory.ts";
import { STATE_VERSION, type PlaygroundState } from "./state.ts";

export const EVIDENCE_DOCUMENT_FORMAT = "service-evidence";

type Check = (value: unknown, at: string) => string | null;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const str: Check = (v, at) => (typeof v === "string" ? null : `${at} must be a string`);
const num: Check = (v, at) => (typeof v === "number" && Number.isFinite(v) ? null : `${at} must be a number`);
const bool: Check = (v, at) => (typeof v === "boolean" ? null : `${at} must be true or false`);
const nullable = (check: Check): Check => (v, at) => (v === null || v === undefined ? null : check(v, at));
const optional = (check: Check): Check => (v, at) => (v === undefined ? null : check(v, at));
const list = (item: Check): Check => (v, at) => {
  if (!Array.isArray(v)) return `${at} must be a list`;
  for (let i = 0; i < v.length; i++) {
    const error = item(v[i], `${at}[${i}]`);
    if (error) return error;
  }
  return null;
};
const object = (fields: Record<string, Check>): Check => (v, at) => {
  if (!isObject(v)) return `${at} must be an object`;
  for (const [name, check] of Object.entries(fields)) {
    const error = check(v[name], `${at}.${name}`);
    if (error) return error;
  }
  return null;
};
const record = (item: Check): Check => (v, at) => {
  if (!isObject(v)) return `${at} must be an object`;
  for (const [key, value] of Object.entries(v)) {
    const error = item(value, `${at}.${key}`);
    if (error) return error;
  }
  return null;
};
const oneOf = (...values: string[]): Check => (v, at) => (typeof v === "string" && values.includes(v) ? null : `${at} must be one of ${values.join(", ")}`);
const gap = object({ complete: (v, at) => (v === false ? null : `${at} must be false`), cause: oneOf("transient", "over_bound", "inconsistent"), detail: str });
const listed = (item: Check): Check => (v, at) => (isObject(v) && v.complete === true ? object({ items: list(item) })(v, at) : gap(v, at));
const lookup = (value: Check): Check => (v, at) => {
  if (!isObject(v)) return `${at} must be an object`;
  if (v.kind === "found") return value(v.value, `${at}.value`);
  if (v.kind === "not_found") return null;
  if (v.kind === "incomplete") return object({ cause: oneOf("transient", "over_bound", "inconsistent"), detail: str })(v, at);
  return `${at}.kind must be found, not_found or incomplete`;
};
const fileRead: Check = (v, at) => {
  if (!isObject(v)) return `${at} must be an object`;
  if (v.kind === "found") return object({ path: str, text: str, bytes: num })(v, at);
  if (v.kind === "missing") return null;
  if (v.kind === "too_large") return object({ path: str, bytes: num })(v, at);
  if (v.kind === "incomplete") return object({ cause: oneOf("transient", "over_bound", "inconsistent"), detail: str })(v, at);
  return `${at}.kind must be found, missing, too_large or incomplete`;
};
/** The code-owners reads, keyed by the locations of the settings' forge directory (a key of another directory is refused). */
const codeownersOf = (forgeDirectory: string): Check => (v, at) => {
  if (!isObject(v)) return `${at} must be an object`;
  const locations = codeownersLocations(forgeDirectory);
  for (const key of Object.keys(v)) if (!locations.includes(key)) return `${at} has an unknown location ${key}`;
  return record(fileRead)(v, at);
};
const user = object({ id: num, login: str, type: str });
const state = object({ state: str });

const evidenceCheck = (forgeDirectory: string): Check => {
  const codeowners = codeownersOf(forgeDirectory);
  return object({
    evidenceVersion: (v, at) => (v === 1 ? null : `${at} must be 1`),
    repository: object({ owner: str, name: str, ownerType: oneOf("Organization", "User") }),
    pullRequest: object({
      number: num,
      headSha: str,
      baseSha: str,
      baseRef: str,
      author: object({ id: num, login: str }),
      state: str,
      draft: bool,
      labels: list(str),
      changedFiles: num,
    }),
    files: listed(object({ filename: str, status: str, previousFilename: nullable(str) })),
    reviews: listed(object({ id: num, user: nullable(user), state: str, commitId: nullable(str), bodyFirstLine: optional(str), nodeId: optional(str) })),
    codeowners,
    repositoryPolicy: fileRead,
    organizationPolicy: fileRead,
    directory: object({
      collaborators: record(lookup(object({ permission: str }))),
      organizationMemberships: record(lookup(state)),
      teams: record(object({ team: optional(lookup(object({ privacy: str }))), repository: optional(lookup(object({ push: bool }))), memberships: record(lookup(state)) })),
      apps: record(lookup(object({ id: num, slug: str }))),
      botUsers: record(lookup(user)),
      reviewEdits: optional(record(lookup(object({ lastEditedAt: nullable(str) })))),
    }),
    sameHeadPullRequests: listed(object({ number: num, headSha: str })),
    // The head's policy files (the change preview); absent in links and documents of a pull request that changes none.
    headFiles: optional(object({ codeowners, repositoryPolicy: fileRead })),
  });
};

// `forgeDirectory` is absent from links and documents made before it was a setting: those were all made under `.forge`.
const forgeDirectoryCheck: Check = (v, at) => {
  if (v === undefined) return null;
  if (typeof v !== "string") return `${at} must be a string`;
  const problem = forgeDirectoryProblem(v);
  return problem === null ? null : `${at} ${problem}`;
};
const settingsCheck = object({ checkName: str, policyPath: str, forgeDirectory: forgeDirectoryCheck, allowInsecureChanges: bool });

export type ReadResult = { readonly ok: true; readonly state: PlaygroundState } | { readonly ok: false; readonly error: string };

export function readState(value: unknown): ReadResult {
  if (!isObject(value)) return { ok: false, error: "not a JSON object" };
  let evidence: unknown;
  let settings: unknown = DEFAULT_EVALUATION_SETTINGS;
  if (value.version === STATE_VERSION && "evidence" in value) {
    evidence = value.evidence;
    settings = value.settings;
  } else if (value.format === EVIDENCE_DOCUMENT_FORMAT) {
    evidence = value.evidence;
    settings = value.settings ?? DEFAULT_EVALUATION_SETTINGS;
  } else if ("evidenceVersion" in value) evidence = value;
  else return { ok: false, error: "neither a playground state nor an evidence document" };
  const settingsError = settingsCheck(settings, "settings");
  if (settingsError !== null) return { ok: false, error: settingsError };
  const s = settings as Omit<EvaluationSettings, "forgeDirectory"> & { forgeDirectory?: string };
  const forgeDirectory = s.forgeDirectory ?? DEFAULT_FORGE_DIRECTORY;
  const error = evidenceCheck(forgeDirectory)(evidence, "evidence");
  if (error !== null) return { ok: false, error };
  return {
    ok: true,
    state: {
      version: STATE_VERSION,
      evidence: evidence as Evidence,
      settings: { checkName: s.checkName, policyPath: s.policyPath, forgeDirectory, allowInsecureChanges: s.allowInsecureChanges },
    },
  };
}

export function readStateText(text: string): ReadResult {
  try {
    return readState(JSON.parse(text));
  } catch {
    return { ok: false, error: "not valid JSON" };
  }
}
