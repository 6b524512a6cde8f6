import { type ExitCodes, exitCodesLine } from "./exit-codes.ts";
import { EXPLAIN_EXIT_CODES, EXPLAIN_USAGE } from "./explain.ts";
import {
  HISTORY_EXIT_CODES, HISTORY_EXPORT_EXIT_CODES, HISTORY_EXPORT_USAGE, HISTORY_REPLAY_EXIT_CODES, HISTORY_REPLAY_USAGE, HISTORY_USAGE, HISTORY_VERIFY_EXIT_CODES, HISTORY_VERIFY_USAGE,
} from "./history.ts";
import { VALIDATE_EXIT_CODES, VALIDATE_USAGE } from "./validate.ts";

/**
 * `service --help` and each command's `--help`, from one table: every command's synopsis (its flags) and exit codes. The
 * command table of docs/operations.md lists the same; e2e/docs/help.test.ts compares the two.
 */
export type CommandHelp = {
  /** The words that name the command: ["database", "migrate"]. */
  readonly name: readonly string[];
  readonly synopsis: string;
  readonly summary: string;
  /** The command's own usage text, ending with its exit codes, when it has one (explain, validate). */
  readonly usage?: string;
  readonly exitCodes: ExitCodes;
};

export const COMMANDS: readonly CommandHelp[] = [
  {
    name: ["serve"], synopsis: "service serve",
    summary: "run the service (HTTP routes and background tasks); the database must be at this binary's migration head",
    exitCodes: [[0, "stopped by SIGTERM or SIGINT after draining"], [1, "the database is unusable or the service cannot start"], [2, "configuration error"]],
  },
  {
    name: ["database", "migrate"], synopsis: "service database migrate",
    summary: "apply the embedded migrations (the only command that changes schema); reads only the database settings",
    exitCodes: [[0, "the schema is at this binary's head"], [1, "the migration failed or the database is newer"], [2, "configuration error"]],
  },
  {
    name: ["database", "check"], synopsis: "service database check",
    summary: "check the database is at this binary's migration head and release contract; reads only the database settings",
    exitCodes: [[0, "at this binary's head and contract"], [1, "not at it, or unreachable"], [2, "configuration error"]],
  },
  {
    name: ["config", "check"], synopsis: "service config check",
    summary: "load and validate the configuration (reading secret files), print the effective non-secret settings",
    exitCodes: [[0, "valid"], [2, "configuration error, naming the variable and rule"]],
  },
  {
    name: ["explain"], synopsis: "service explain --repository OWNER/NAME --pull N [--json] [--installation ID]",
    summary: "gather the evidence the worker would (configured App credentials) and print the decision, or with --json an evidence document for the playground (no token, key or secret in it)",
    usage: EXPLAIN_USAGE,
    exitCodes: EXPLAIN_EXIT_CODES,
  },
  {
    name: ["history"], synopsis: "service history --repository OWNER/NAME [--pull N | --commit SHA] [--overrides] [--json]",
    summary: "print the decision and merge records of a pull request, or the record behind a merge or head commit (why it merged: who approved what, on which commit, under which CODEOWNERS); --overrides keeps only break-glass overrides; reads only the database settings",
    usage: HISTORY_USAGE,
    exitCodes: HISTORY_EXIT_CODES,
  },
  {
    name: ["history", "export"], synopsis: "service history export [--since DATE] [--until DATE] [--repository OWNER/NAME] [--unapproved] [--overrides]",
    summary: "write the matching records as JSON Lines (one record with its schema_version per line), streamed oldest first; reads only the database settings",
    usage: HISTORY_EXPORT_USAGE,
    exitCodes: HISTORY_EXPORT_EXIT_CODES,
  },
  {
    name: ["history", "replay"], synopsis: "service history replay ID [--json]",
    summary: "read a decision record's files again at their blob SHAs (configured App credentials), run today's evaluation on the recorded inputs and say whether it reaches the recorded conclusion, owner sets and reasons; --json prints the evidence document for the playground",
    usage: HISTORY_REPLAY_USAGE,
    exitCodes: HISTORY_REPLAY_EXIT_CODES,
  },
  {
    name: ["history", "verify"], synopsis: "service history verify [--since CHECKPOINT|DATE] [--attestations [--public-key FILE]]",
    summary: "recompute every record's digest and every checkpoint (Merkle root, link to the one before) and name the first record or checkpoint that was changed, removed or inserted; prints the last checkpoint's hash to keep elsewhere; reads only the database settings",
    usage: HISTORY_VERIFY_USAGE,
    exitCodes: HISTORY_VERIFY_EXIT_CODES,
  },
  {
    name: ["validate"], synopsis: "service validate [DIR] [--files-from FILE|-] [--forge-directory NAME] [--format text|json|github] [--policy FILE] [--organization-policy FILE] [--strict]",
    summary: "check the CODEOWNERS and policy files the service would read in DIR, offline (no settings, database or forge)",
    usage: VALIDATE_USAGE,
    exitCodes: VALIDATE_EXIT_CODES,
  },
  {
    name: ["demo"], synopsis: "service demo [--once]",
    summary: "run the service on a fresh embedded database against the built-in forge simulator, walk one pull request through fail → approve → success → new commit → fail → approve → success → merge, merge a second one without approval, and print the service history commands (with the database, kept after exit) and the decisions page; --once exits after the walk-through",
    exitCodes: [[0, "the walk-through completed (with --once), or stopped by Ctrl-C"], [1, "the walk-through failed"]],
  },
  { name: ["--version"], synopsis: "service --version", summary: "print the application version", exitCodes: [[0, "printed"]] },
];

const exitLine = (help: CommandHelp) => exitCodesLine(help.exitCodes);

/** One command's `--help`. */
export function commandUsage(help: CommandHelp): string {
  return help.usage ?? `usage: ${help.synopsis}\n\n${help.summary[0]!.toUpperCase()}${help.summary.slice(1)}.\n\n${exitLine(help)}`;
}

/** `service --help`: every command with its flags and exit codes. */
export function overallUsage(): string {
  const blocks = COMMANDS.map((c) => `  ${c.synopsis.replace(/^service /, "")}\n      ${c.summary}\n      ${exitLine(c)}`);
  return `usage: service <command>\n\ncommands:\n${blocks.join("\n")}\n\nEach command's --help prints its own usage. Configuration comes from SERVICE_* environment variables; secrets from files\n(docs/operations.md "Settings").`;
}

/**
 * The command whose `--help` (or `-h`) `argv` asks for: the one its words name, followed by nothing else unless the command
 * takes arguments (`validate DIR --help`). Null when it names none (`database --help`): the caller prints the overall usage.
 */
export function helpRequest(argv: readonly string[]): CommandHelp | null {
  const words = argv.filter((a) => a !== "--help" && a !== "-h");
  const takesArguments = (c: CommandHelp) => c.synopsis !== `service ${c.name.join(" ")}`;
  // The longest name that matches: `history export --help` names `history export`, not `history` with arguments.
  const named = COMMANDS.filter((c) => c.name.every((w, i) => words[i] === w) && (words.length === c.name.length || takesArguments(c)));
  return named.sort((a, b) => b.name.length - a.name.length)[0] ?? null;
}
