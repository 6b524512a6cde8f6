import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ensureBinary, runBinary } from "../support/binary.ts";
import { ROOT, tableAfter } from "./markdown.ts";

/**
 * `service --help` and each command's `--help` list the same flags and exit codes as the command table of
 * docs/operations.md ("Commands"), checked on the compiled binary.
 */
type Row = { command: string; words: string[]; flags: string[]; exitCodes: number[] };
const flagsOf = (text: string) => [...new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((m) => m[0]))].filter((f) => f !== "--help").sort();
const codesOf = (text: string) => [...text.matchAll(/(?:^|;)\s*(\d+)\b/g)].map((m) => Number(m[1])).sort();
const exitLineOf = (help: string) => /^exit codes: (.*)$/m.exec(help)?.[1] ?? "";

/** The command's words are the synopsis' leading lowercase words (`database migrate`), or `--version`. */
const rows: Row[] = tableAfter(join(ROOT, "docs", "operations.md"), "Commands").map(([synopsis, , exits]) => {
  const command = /^`([^`]+)`$/.exec(synopsis!)?.[1] ?? synopsis!;
  const rest = command.split(/\s+/).slice(1);
  const firstArgument = rest.findIndex((w) => !/^[a-z]+$/.test(w));
  const words = rest[0] === "--version" ? ["--version"] : firstArgument === -1 ? rest : rest.slice(0, firstArgument);
  return { command, words, flags: flagsOf(command), exitCodes: codesOf(exits!) };
});

beforeAll(() => ensureBinary());

describe("help matches docs/operations.md", () => {
  test("the command table lists every command", () => {
    expect(rows.map((r) => r.words.join(" "))).toEqual(["serve", "database migrate", "database check", "config check", "explain", "history", "history export", "history replay", "history verify", "validate", "demo", "--version"]);
  });

  test("each command's --help prints its flags and exit codes, on stdout with exit 0 and without running the command", () => {
    for (const row of rows.filter((r) => r.words[0] !== "--version")) {
      const result = runBinary([...row.words, "--help"], { SERVICE_DATABASE_URL: "sqlite:/nonexistent/never.db" });
      expect({ command: row.command, exitCode: result.exitCode, stderr: result.stderr }).toEqual({ command: row.command, exitCode: 0, stderr: "" });
      expect({ command: row.command, usage: result.stdout.startsWith(`usage: service ${row.words.join(" ")}`) }).toEqual({ command: row.command, usage: true });
      expect({ command: row.command, flags: flagsOf(result.stdout) }).toEqual({ command: row.command, flags: row.flags.filter((f) => f !== "--version") });
      expect({ command: row.command, exitCodes: codesOf(exitLineOf(result.stdout)) }).toEqual({ command: row.command, exitCodes: row.exitCodes });
    }
  });

  test("service --help lists every command with the same flags and exit codes", () => {
    const result = runBinary(["--help"], {});
    expect(result.exitCode).toBe(0);
    const blocks = result.stdout.split(/\n(?=  \S)/).slice(1);
    for (const row of rows) {
      const block = blocks.find((b) => b.trimStart().startsWith(row.command.replace(/^service /, "")));
      expect({ command: row.command, listed: block !== undefined }).toEqual({ command: row.command, listed: true });
      expect({ command: row.command, flags: flagsOf(block!.split("\n")[0]!) }).toEqual({ command: row.command, flags: row.flags });
      expect({ command: row.command, exitCodes: codesOf(exitLineOf(block!.split("\n").map((l) => l.trim()).join("\n"))) }).toEqual({ command: row.command, exitCodes: row.exitCodes });
    }
  });
});
