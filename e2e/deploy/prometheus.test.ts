import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * deploy/prometheus/alerts.yaml: valid rule groups (`promtool check rules`), each alert unit-tested (`promtool test rules`
 * deploy/prometheus/alerts.test.yaml: it fires on a synthetic series and stays quiet on a healthy one), and each one
 * described in docs/operations.md. promtool comes from Debian's `prometheus` package, which scripts/test.sh installs; without
 * it these tests fail (never skip), so a CI machine without it cannot pass unchecked rules.
 */
type Obj = Record<string, any>;
const ROOT = join(import.meta.dir, "..", "..");
const DIR = join(ROOT, "deploy", "prometheus");
const rules = Bun.YAML.parse(readFileSync(join(DIR, "alerts.yaml"), "utf8")) as Obj;
const unitTests = Bun.YAML.parse(readFileSync(join(DIR, "alerts.test.yaml"), "utf8")) as Obj;
const alerts = (rules.groups as Obj[]).flatMap((g) => g.rules as Obj[]).filter((r) => r.alert);

function promtool(...args: string[]) {
  const path = Bun.which("promtool") ?? Bun.which("promtool", { PATH: "/usr/bin:/usr/local/bin" });
  if (!path) throw new Error("promtool not found: install Debian's `prometheus` package (npm test / scripts/test.sh installs it)");
  const result = Bun.spawnSync([path, ...args], { cwd: DIR, stdout: "pipe", stderr: "pipe" });
  return { exitCode: result.exitCode, output: result.stdout.toString() + result.stderr.toString() };
}

describe("Prometheus alerts", () => {
  test("the rule groups pass promtool check rules", () => {
    const result = promtool("check", "rules", "alerts.yaml");
    expect(result.output).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(result.exitCode).toBe(0);
  });

  test("every alert's unit tests pass under promtool test rules", () => {
    const result = promtool("test", "rules", "alerts.test.yaml");
    if (result.exitCode !== 0) console.error(result.output);
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain("SUCCESS");
  });

  test("every alert has a case where it fires and one where it stays quiet", () => {
    const cases = (unitTests.tests as Obj[]).flatMap((t) => (t.alert_rule_test ?? []) as Obj[]);
    const missing = alerts.flatMap((a) => {
      const own = cases.filter((c) => c.alertname === a.alert);
      const gaps: string[] = [];
      if (!own.some((c) => (c.exp_alerts ?? []).length > 0)) gaps.push(`${a.alert}: no firing case`);
      if (!own.some((c) => (c.exp_alerts ?? []).length === 0)) gaps.push(`${a.alert}: no quiet case`);
      return gaps;
    });
    expect(missing).toEqual([]);
  });

  test("the file is PrometheusRule-compatible: named groups of alerting rules with a severity and a runbook", () => {
    expect(Object.keys(rules)).toEqual(["groups"]);
    const names = (rules.groups as Obj[]).map((g) => g.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
    for (const alert of alerts) {
      expect({ alert: alert.alert, severity: alert.labels?.severity }).toEqual({ alert: alert.alert, severity: expect.stringMatching(/^(warning|critical)$/) });
      expect(alert.annotations?.runbook).toBe("docs/operations.md#alerts");
    }
  });

  test("every alert is described in docs/operations.md with its expression", () => {
    const operations = readFileSync(join(ROOT, "docs", "operations.md"), "utf8");
    const undocumented = alerts.filter((a) => !operations.includes(a.alert) || !operations.includes(String(a.expr).trim().replaceAll("|", "\\|")));
    expect(undocumented.map((a) => a.alert)).toEqual([]);
  });
});
