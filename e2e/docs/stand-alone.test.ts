import { describe, expect, test } from "bun:test";
import { dirname, join, relative, resolve } from "node:path";
import { COMMANDS, overallUsage } from "../../server/commands/help.ts";
import { createMetrics } from "../../server/observability/metrics.ts";
import { documentationFiles, read, ROOT, shortName } from "./markdown.ts";

/**
 * README.md, docs/, the /metrics help text and the commands' help are read by people who have only the published repository:
 * they never point outside it (a `../` path that leaves the repository, a path on the machine it was written on), and never
 * cite documents that are not in it or speak of how the project was built.
 */

/** Words a reader of the published repository cannot follow, each with why. */
const FORBIDDEN: readonly (readonly [RegExp, string])[] = [
  [/\bDESIGN\b/, "cites a design document that is not in the repository"],
  [/\bRECIPES\b|\bSTYLE\s+\d+/, "cites a guide that is not in the repository"],
  // "specs" alone is the Playwright suite's name for its files.
  [/\bspec(?:ification)?(?:'s)?\b/i, "cites a specification that is not in the repository"],
  [/\bissues?\s+#?\d+/i, "cites an issue by number"],
  [/\bitems?\s+\d+/i, "cites an issue's item by number"],
  [/\bsections?\s+\d+(?:\.\d+)*/i, "cites a section by number"],
  [/§/, "cites a section by number"],
  [/\b\d+\.\d+\s+"[A-Z][a-z]+/, "cites a numbered section by name"],
  [/\bissue notes?\b/i, "speaks of how the project was built"],
  [/\b(?:first|second|next|our|the) plan\b/i, "speaks of how the project was built"],
  [/\bhelpers?\b/i, "speaks of how the project was built"],
  [/\blead engineer\b/i, "speaks of how the project was built"],
  [/\b(?:work|working|build|coding) sessions?\b/i, "speaks of how the project was built"],
];

/** Citations in the product's strings: narrower than FORBIDDEN, as code names things `spec` (a list's specification). */
const CITATION = /\bDESIGN\b|\bRECIPES\b|\bSTYLE \d|\bthe spec\b|\bspec's\b|\bissue \d|\bitem \d|\.\.\/shared|\bsection \d/i;

/**
 * Text a forbidden word may appear in without citing anything: Playwright spec file names (`e2e/setup.spec.ts`) and the
 * `spec` field of a Kubernetes object (in prose, and as a YAML key in deploy/).
 */
const ALLOWED = [/[\w./-]*\.spec\.ts\b/g, /`spec`(?= of a PrometheusRule)/g, /`spec:`/g, /^\s*spec:(?=\s|$)/g];

/** Relative paths in `text` (Markdown links and plain mentions alike) that lead out of the repository from `file`'s folder. */
function pathsLeavingRepository(file: string, text: string): string[] {
  const escaping = [...text.matchAll(/(?:\.\.\/)+[^\s`)'"\]]*/g)].map((m) => m[0]).filter((path) => relative(ROOT, resolve(dirname(file), path)).startsWith(".."));
  const absolute = [...text.matchAll(/(?<![\w:/.])\/(?:work|home|tmp)\/[^\s`)'"\]]*/g)].map((m) => m[0]);
  return [...escaping, ...absolute];
}

function findings(where: string, text: string, file = join(ROOT, "README.md")): string[] {
  const lines = text.split("\n");
  const found: string[] = [];
  lines.forEach((line, index) => {
    const at = `${where}:${index + 1}`;
    for (const path of pathsLeavingRepository(file, line)) found.push(`${at}: ${path} (outside the repository)`);
    const cleaned = ALLOWED.reduce((rest, pattern) => rest.replace(pattern, ""), line);
    for (const [pattern, why] of FORBIDDEN) {
      const match = pattern.exec(cleaned);
      if (match) found.push(`${at}: "${match[0]}" ${why}`);
    }
  });
  return found;
}

describe("the documentation stands alone", () => {
  test("README.md and docs/*.md have no path out of the repository and cite no document, issue or section outside it", () => {
    expect(documentationFiles().flatMap((file) => findings(shortName(file), read(file), file))).toEqual([]);
  });

  test("the deployment examples operators copy (deploy/) and the build script cite no document, issue or section outside the repository", () => {
    const files = [...new Bun.Glob("deploy/**/*.{yaml,yml,json,md,conf,sh}").scanSync({ cwd: ROOT }), "scripts/build.ts"];
    expect(files.length).toBeGreaterThan(4);
    expect(files.flatMap((file) => findings(file, read(join(ROOT, file)), join(ROOT, file)))).toEqual([]);
  });

  test("the /metrics help text speaks in the service's own words", async () => {
    const { registry } = createMetrics();
    const help = (await registry.getMetricsAsJSON()).map((metric) => `${metric.name}: ${metric.help}`);
    expect(help.length).toBeGreaterThan(10);
    expect(findings("/metrics", help.join("\n"))).toEqual([]);
  });

  test("the commands' help speaks in the service's own words", () => {
    const text = [overallUsage(), ...COMMANDS.map((c) => `${c.synopsis}\n${c.summary}\n${c.usage ?? ""}`)].join("\n");
    expect(findings("--help", text)).toEqual([]);
  });

  test("no string in the product's code (messages, pages, check output) cites the design, the specification or an issue", () => {
    const sources = [...new Bun.Glob("{server,web}/**/*.{ts,tsx,html}").scanSync({ cwd: ROOT })].filter((f) => !/\.test\.tsx?$/.test(f) && !f.includes("node_modules") && !f.endsWith(".gen.ts"));
    expect(sources.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const source of sources) {
      // Comments are for the people who change the code; strings reach the people who run it.
      const code = read(join(ROOT, source)).replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
      for (const [literal] of code.matchAll(/"[^"\n]*"|`[^`]*`|'[^'\n]*'/g)) {
        if (CITATION.test(literal)) found.push(`${source}: ${literal.slice(0, 120)}`);
      }
    }
    expect(found).toEqual([]);
  });

  test("the check finds what it forbids", () => {
    expect(findings("x", "See `../shared/DESIGN.md` (DESIGN 3.10).")).toEqual(["x:1: ../shared/DESIGN.md (outside the repository)", "x:1: \"DESIGN\" cites a design document that is not in the repository"]);
    expect(findings("x", "the spec's fields; issue 28 item 4; Every issue of the first plan is built")).toHaveLength(4);
    expect(findings("x", "as RECIPES 8 and STYLE 11 say")).toHaveLength(1);
    expect(findings(join("docs", "x"), "[deploy](../deploy/x.yaml) and `e2e/setup.spec.ts`", join(ROOT, "docs", "x.md"))).toEqual([]);
    expect(findings("x", "[deploy](../deploy/x.yaml)")).toEqual(["x:1: ../deploy/x.yaml (outside the repository)"]);
  });
});
