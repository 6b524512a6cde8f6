import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { SETUP_EVENTS, SETUP_PERMISSIONS } from "../../server/setup/manifest.ts";
import { read, ROOT } from "./markdown.ts";

/**
 * The "GitHub" section of docs/getting-started.md lists exactly the permissions and events of the App manifest the setup flow
 * posts, each with its reason: an administrator reading it knows what the App will ask for before pressing "Create".
 */

/** GitHub's names of the permissions on its App settings page, by the manifest's key. */
const GITHUB_NAMES: Record<string, string> = {
  checks: "Checks",
  statuses: "Commit statuses",
  contents: "Contents",
  metadata: "Metadata",
  pull_requests: "Pull requests",
  members: "Members",
  merge_queues: "Merge queues",
};

/** The rows (cells trimmed) of every Markdown table in the section under `## heading`. */
function tablesOfSection(path: string, heading: string): string[][][] {
  const lines = read(path).split("\n");
  const start = lines.indexOf(`## ${heading}`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const tables: string[][][] = [];
  let current: string[][] | null = null;
  for (const line of lines.slice(start + 1)) {
    if (/^## /.test(line)) break;
    if (!line.startsWith("|")) {
      current = null;
      continue;
    }
    if (/^\|\s*-/.test(line)) continue;
    const cells = line.slice(1, -1).split("|").map((cell) => cell.trim());
    if (current === null) tables.push((current = []));
    else current.push(cells);
  }
  return tables;
}

describe("the GitHub App as docs/getting-started.md describes it", () => {
  const [permissions, events] = tablesOfSection(join(ROOT, "docs", "getting-started.md"), "GitHub");

  test("lists exactly the manifest's permissions, each with its access and a reason", () => {
    const expected = Object.entries(SETUP_PERMISSIONS).map(([key, access]) => [GITHUB_NAMES[key] ?? `unnamed permission ${key}`, access]);
    expect(permissions!.map(([name, access]) => [name, access]).sort()).toEqual(expected.sort());
    for (const row of permissions!) expect(row[2]!.length).toBeGreaterThan(20);
  });

  test("lists exactly the manifest's events, each with a reason", () => {
    expect(events!.map(([name]) => name!.replace(/`/g, "")).sort()).toEqual([...SETUP_EVENTS].sort());
    for (const row of events!) expect(row[1]!.length).toBeGreaterThan(20);
  });
});
