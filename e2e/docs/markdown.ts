import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "../support/binary.ts";

export { ROOT };

/** The documentation the docs tests keep true: README.md and every Markdown file under docs/. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => join(ROOT, "docs", f));
  return [join(ROOT, "README.md"), ...docs.sort()];
}

export const read = (path: string) => readFileSync(path, "utf8");
export const shortName = (path: string) => relative(ROOT, path);

export type Fence = { file: string; line: number; info: string; text: string };

/** Fenced code blocks (``` or ~~~, any indentation), with their info string and the line they open on. */
export function fences(path: string): Fence[] {
  const lines = read(path).split("\n");
  const found: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, marker, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^\\s*${marker![0]}{${marker!.length},}\\s*$`).test(lines[j]!); j++) body.push(lines[j]!.slice(Math.min(indent!.length, /^\s*/.exec(lines[j]!)![0].length)));
    found.push({ file: shortName(path), line: i + 1, info: info!.trim(), text: body.join("\n") + "\n" });
    i = j;
  }
  return found;
}

/** The rows of the first Markdown table after the heading `heading` (cells trimmed, `\|` kept as `|`). */
export function tableAfter(path: string, heading: string): string[][] {
  const lines = read(path).split("\n");
  const start = lines.findIndex((l) => /^#+ /.test(l) && l.replace(/^#+ /, "").trim() === heading);
  if (start < 0) throw new Error(`${shortName(path)}: no heading "${heading}"`);
  const rows: string[][] = [];
  for (let i = start + 1; i < lines.length && !/^#+ /.test(lines[i]!); i++) {
    const line = lines[i]!;
    if (!line.startsWith("|")) {
      if (rows.length > 0) break;
      continue;
    }
    if (/^\|\s*-/.test(line)) continue;
    rows.push(line.slice(1, line.endsWith("|") ? -1 : undefined).split(/(?<!\\)\|/).map((c) => c.trim().replaceAll("\\|", "|")));
  }
  return rows.slice(1); // without the header row
}
