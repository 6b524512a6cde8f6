import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary, runBinary, type RunningBinary, startBinary } from "../support/binary.ts";
import { metricNames, registeredMetricNames } from "./promql.ts";

/**
 * Every metric the operator kit reads (deploy/prometheus/alerts.yaml, deploy/grafana/dashboard.json) is registered by the
 * service: checked against `/metrics` of the compiled binary on a fresh embedded database, at its first scrape. The one
 * exception is the readiness alert's kube_pod_status_ready, which kube-state-metrics publishes.
 */
type Obj = Record<string, any>;
const ROOT = join(import.meta.dir, "..", "..");
const EXTERNAL = new Set(["kube_pod_status_ready"]);
const alertRules = ((Bun.YAML.parse(readFileSync(join(ROOT, "deploy", "prometheus", "alerts.yaml"), "utf8")) as Obj).groups as Obj[]).flatMap((g) => g.rules as Obj[]);
const dashboard = JSON.parse(readFileSync(join(ROOT, "deploy", "grafana", "dashboard.json"), "utf8")) as Obj;
const dashboardPanels = (dashboard.panels as Obj[]).flatMap((p) => [p, ...((p.panels as Obj[] | undefined) ?? [])]);
const dashboardQueries = [
  ...dashboardPanels.flatMap((p) => ((p.targets as Obj[] | undefined) ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: String(t.expr) }))),
  ...(dashboard.templating.list as Obj[]).filter((v) => v.type === "query").map((v) => ({ where: `variable ${v.name}`, expr: String(v.definition).replace(/^label_values\((\w+),.*$/, "$1") })),
];

let dir: string;
let service: RunningBinary;
let exposition: string;
beforeAll(async () => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-kit-"));
  const env = { SERVICE_DATABASE_URL: `sqlite:${join(dir, "kit.db")}`, SERVICE_RECONCILE_ENABLED: "false" };
  expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
  service = await startBinary(env);
  exposition = await (await fetch(`${service.url}/metrics`)).text();
});
afterAll(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the operator kit reads only metrics the service registers", () => {
  test("every alert's metrics are on the running binary's /metrics", () => {
    const registered = registeredMetricNames(exposition);
    expect(registered.has("service_queue_depth")).toBe(true);
    const unknown = alertRules.flatMap((r) => metricNames(String(r.expr)).filter((m) => !registered.has(m) && !EXTERNAL.has(m)).map((m) => `${r.alert}: ${m}`));
    expect(unknown).toEqual([]);
    expect(alertRules.every((r) => metricNames(String(r.expr)).length > 0)).toBe(true);
  });

  test("every dashboard query's metrics are on the running binary's /metrics", () => {
    const registered = registeredMetricNames(exposition);
    expect(dashboardQueries.length).toBeGreaterThan(10);
    const unknown = dashboardQueries.flatMap((q) => metricNames(q.expr).filter((m) => !registered.has(m)).map((m) => `${q.where}: ${m}`));
    expect(unknown).toEqual([]);
    expect(dashboardQueries.filter((q) => metricNames(q.expr).length === 0)).toEqual([]);
  });

  test("an alert watches unapproved merges and break-glass overrides, both on /metrics from the first scrape", () => {
    const alerted = new Set(alertRules.flatMap((r) => metricNames(String(r.expr))));
    for (const metric of ["service_unapproved_merges_total", "service_break_glass_total"]) {
      expect({ metric, alerted: alerted.has(metric) }).toEqual({ metric, alerted: true });
      expect(exposition).toMatch(new RegExp(`^${metric} 0$`, "m"));
    }
  });

  test("every fixed-vocabulary series the alerts and panels group by exists at the first scrape", () => {
    for (const reason of ["signature", "busy", "authority_timeout"]) expect(exposition).toContain(`service_webhook_failures_total{reason="${reason}"} 0`);
    for (const reason of ["deadlock", "connection"]) expect(exposition).toContain(`service_database_errors_total{reason="${reason}"} 0`);
    expect(exposition).toContain('service_forge_requests_total{kind="read",outcome="deferred"} 0');
    expect(exposition).toMatch(/^service_evaluation_seconds_bucket\{le="\+Inf"\} 0$/m);
  });
});

describe("Grafana dashboard", () => {
  test("is dashboard JSON Grafana imports: title, uid, schema version, a Prometheus data-source variable, panels laid on the 24-column grid without overlap", () => {
    expect(dashboard).toMatchObject({ title: expect.any(String), uid: expect.stringMatching(/^[A-Za-z0-9_-]{1,40}$/), schemaVersion: expect.any(Number), panels: expect.any(Array) });
    expect(dashboard.id ?? null).toBeNull(); // an import must not carry another Grafana's database ID
    const datasource = (dashboard.templating.list as Obj[]).find((v) => v.type === "datasource");
    expect(datasource).toMatchObject({ name: "datasource", query: "prometheus" });
    const ids = dashboardPanels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Set<string>();
    for (const panel of dashboardPanels) {
      const { x, y, w, h } = panel.gridPos;
      expect({ title: panel.title, fits: Number.isInteger(x) && Number.isInteger(y) && w > 0 && h > 0 && x + w <= 24 }).toEqual({ title: panel.title, fits: true });
      for (let i = x; i < x + w; i++) for (let j = y; j < y + h; j++) {
        expect({ title: panel.title, overlaps: cells.has(`${i},${j}`) }).toEqual({ title: panel.title, overlaps: false });
        cells.add(`${i},${j}`);
      }
      if (panel.type === "row") continue;
      expect(["timeseries", "stat", "gauge", "table"]).toContain(panel.type);
      expect(panel.datasource).toEqual({ type: "prometheus", uid: "${datasource}" });
      const refIds = (panel.targets as Obj[]).map((t) => t.refId);
      expect(refIds.length).toBeGreaterThan(0);
      expect(new Set(refIds).size).toBe(refIds.length);
    }
  });

  test("shows unapproved merges, break-glass overrides, webhooks by outcome, queue depth, decision latency, forge budget, database errors and reconciliation age", () => {
    const read = new Set(dashboardQueries.flatMap((q) => metricNames(q.expr)));
    for (const metric of ["service_unapproved_merges_total", "service_break_glass_total", "service_webhooks_total", "service_webhook_failures_total", "service_queue_depth", "service_evaluation_seconds_bucket", "service_forge_rate_limit_remaining", "service_database_errors_total", "service_reconciliation_last_success_timestamp_seconds"]) {
      expect({ metric, shown: read.has(metric) }).toEqual({ metric, shown: true });
    }
  });
});
