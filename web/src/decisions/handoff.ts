// "Open in playground": a decision record's inputs as the playground state that `service explain --json` documents also
// become (web/src/read-state.ts), carried in the playground link's fragment (web/src/codec.ts), so nothing is sent anywhere.
//
// A record names its files by blob SHA and never keeps their contents (DESIGN 3.10). The page does not fetch them (that
// would make an operator page ask the forge with the App's credentials on every click); each file the decision read is
// handed over as a comment-only placeholder that says which file it stands for, at which commit, where to get it, and that
// `service history replay ID --json` writes the whole evidence document with the files. Until the files are pasted, the
// playground decides on the placeholders, and the page says so before the link is followed.
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type FileRead } from "../../../server/evaluation/evidence.ts";
import { DEFAULT_FORGE_DIRECTORY } from "../../../server/policy/forge-directory.ts";
import type { DecisionRecord, RecordedFileRead } from "../../../server/records/schema.ts";
import { encodeState } from "../codec.ts";
import { STATE_VERSION, type PlaygroundState } from "../state.ts";
import { blobUrl } from "./links.ts";

export type MissingFile = { readonly role: string; readonly path: string; readonly blobSha: string | null; readonly bytes: number; readonly link: string | null };

export type Handoff =
  | { readonly kind: "ready"; readonly state: PlaygroundState; readonly missing: readonly MissingFile[] }
  | { readonly kind: "unavailable"; readonly why: string };

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

function placeholder(record: DecisionRecord, file: MissingFile, commit: string | null, where: string): string {
  const lines = [
    `# Decision record ${record.id} keeps this file by its blob SHA, not its contents:`,
    `#   ${file.path}, blob ${file.blobSha ?? "unknown (the forge did not say)"}, ${file.bytes} bytes, ${where}${commit === null ? "" : ` ${commit}`}.`,
    file.link === null ? "# Paste the file as it was at that commit here," : `# Paste the file as it was at that commit here (${file.link}),`,
    `# or run \`service history replay ${record.id} --json\` and open that evidence document, which has the files.`,
    "# Until then the playground decides on this placeholder, not on the recorded file.",
  ];
  return `${lines.join("\n")}\n`;
}

/** The record's inputs as a playground state, each file the decision read replaced by a placeholder that names it. */
export function handoffOf(record: DecisionRecord, web: string | null): Handoff {
  if (record.inputs === null) {
    return { kind: "unavailable", why: "This record was summarised past its size bound and keeps no inputs, so there is nothing to open in the playground." };
  }
  const inputs = record.inputs;
  const missing: MissingFile[] = [];
  const repository = record.repository.full_name;
  const orgRepository = record.organization_policy?.repository ?? null;
  const orgCommit = record.organization_policy?.commit_sha ?? null;
  const toRead = (read: RecordedFileRead, role: string, fullName: string | null, commit: string | null, where: string): FileRead => {
    if (read.kind !== "found") return read;
    const link = fullName === null ? null : blobUrl(web, fullName, commit, read.path);
    const file: MissingFile = { role, path: read.path, blobSha: read.blob_sha, bytes: read.bytes, link };
    missing.push(file);
    const text = placeholder(record, file, commit, where);
    return { kind: "found", path: read.path, text, bytes: utf8Bytes(text) };
  };
  const codeowners = Object.fromEntries(
    Object.entries(inputs.codeowners).map(([location, read]) => [location, toRead(read as RecordedFileRead, "code-owners file", repository, record.base_sha, "at the base commit")]),
  );
  const evidence = {
    ...inputs,
    codeowners,
    repositoryPolicy: toRead(inputs.repositoryPolicy, "repository policy", repository, record.base_sha, "at the base commit"),
    organizationPolicy: toRead(inputs.organizationPolicy, "organization policy", orgRepository, orgCommit, orgRepository === null ? "in the organization policy repository" : orgCommit === null ? `in ${orgRepository} (its commit was not recorded)` : `in ${orgRepository} at commit`),
  } as unknown as Evidence;
  // The settings the record was evaluated under (as replay uses them); an older record without them: the defaults, with the
  // policy path it read.
  const policyPath = inputs.repositoryPolicy.kind === "found" ? inputs.repositoryPolicy.path : DEFAULT_EVALUATION_SETTINGS.policyPath;
  // The forge directory is the recorded one, `.forge` for a record from before it was recorded (as replay reads it).
  const forgeDirectory = record.settings?.forge_directory ?? DEFAULT_FORGE_DIRECTORY;
  const settings = record.settings === undefined
    ? { ...DEFAULT_EVALUATION_SETTINGS, policyPath, forgeDirectory }
    : { checkName: record.settings.check_name, policyPath: record.settings.policy_path, forgeDirectory, allowInsecureChanges: record.settings.allow_insecure_changes };
  return { kind: "ready", state: { version: STATE_VERSION, evidence, settings }, missing };
}

/** The playground link for a state: the page at /playground/ with the state in its fragment. */
export async function playgroundHref(state: PlaygroundState): Promise<string> {
  return `/playground/#${await encodeState(state)}`;
}
