import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { generateAppKeys } from "../../server/simulator/scenario.ts";
import { loadConfig } from "../../server/config/index.ts";

/**
 * The Kubernetes example (deploy/kubernetes/codeowner-approval.yaml, docs/operations.md "Deployment") parsed with Bun's YAML parser and checked against the
 * spec: one replica, Recreate, the startup-probe budget, secrets as read-only files, the hardened security context, a
 * migration Job, only the webhook route public; and its settings load under production validation.
 */
type Obj = Record<string, any>;
const MANIFEST = join(import.meta.dir, "..", "..", "deploy", "kubernetes", "codeowner-approval.yaml");
const documents = (Bun.YAML.parse(readFileSync(MANIFEST, "utf8")) as Obj[]).filter(Boolean);
const byKind = (kind: string) => documents.filter((d) => d.kind === kind);
const one = (kind: string): Obj => {
  const found = byKind(kind);
  expect(found).toHaveLength(1);
  return found[0]!;
};

const deployment = () => one("Deployment");
const job = () => one("Job");
const podSpecs = () => [["Deployment", deployment().spec.template.spec], ["Job", job().spec.template.spec]] as Array<[string, Obj]>;

/** The file a container sees at `path`: the secret volume mounted over it and the key projected to that name. */
function secretFileAt(pod: Obj, container: Obj, path: string): { secretName: string; key: string; readOnly: boolean } | null {
  for (const mount of container.volumeMounts ?? []) {
    if (posix.dirname(path) !== mount.mountPath) continue;
    const volume = (pod.volumes ?? []).find((v: Obj) => v.name === mount.name);
    const item = volume?.secret?.items?.find((i: Obj) => i.path === posix.basename(path));
    if (volume?.secret && item) return { secretName: volume.secret.secretName, key: item.key, readOnly: mount.readOnly === true };
  }
  return null;
}

describe("Kubernetes example", () => {
  test("parses into the expected objects", () => {
    expect(documents.map((d) => d.kind).sort()).toEqual(["Deployment", "Ingress", "Job", "NetworkPolicy", "Service", "ServiceAccount"]);
    for (const doc of documents) {
      expect(typeof doc.apiVersion).toBe("string");
      expect(typeof doc.metadata?.name).toBe("string");
    }
  });

  test("one replica, rolled out with Recreate", () => {
    expect(deployment().spec.replicas).toBe(1);
    expect(deployment().spec.strategy).toEqual({ type: "Recreate" });
    const labels = deployment().spec.template.metadata.labels;
    expect(deployment().spec.selector.matchLabels).toEqual(labels);
    expect(one("Service").spec.selector).toEqual(labels);
  });

  test("the spec's probe budget: startup probe on /health/live every 5 s, 3 s timeout, 60 failures; liveness and readiness", () => {
    const [container] = deployment().spec.template.spec.containers;
    const port = container.ports.find((p: Obj) => p.name === "http");
    expect(port.containerPort).toBe(8080);
    expect(container.startupProbe).toEqual({ httpGet: { path: "/health/live", port: "http" }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 60 });
    expect(container.livenessProbe.httpGet).toEqual({ path: "/health/live", port: "http" });
    expect(container.readinessProbe.httpGet).toEqual({ path: "/health/ready", port: "http" });
    for (const probe of [container.livenessProbe, container.readinessProbe]) expect(probe.timeoutSeconds).toBeLessThanOrEqual(probe.periodSeconds);
    expect(deployment().spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(10);
  });

  test("every container runs non-root as 65532, read-only, without capabilities or privilege escalation, seccomp RuntimeDefault", () => {
    for (const [kind, pod] of podSpecs()) {
      expect(pod.securityContext, kind).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
      expect(pod.automountServiceAccountToken, kind).toBe(false);
      for (const container of pod.containers) {
        expect(container.securityContext, `${kind}/${container.name}`).toMatchObject({
          runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] }, seccompProfile: { type: "RuntimeDefault" },
        });
        expect(container.securityContext.privileged ?? false).toBe(false);
        expect(container.securityContext.capabilities.add ?? []).toEqual([]);
      }
    }
  });

  test("secrets reach the containers only as files on read-only secret volumes, never as values", () => {
    expect(byKind("Secret")).toEqual([]);
    for (const [kind, pod] of podSpecs()) {
      for (const container of pod.containers) {
        const env: Obj[] = container.env ?? [];
        const names = env.map((e) => e.name);
        expect(names).not.toContain("SERVICE_DATABASE_URL");
        expect(names.filter((n) => /SECRET$|KEY$|PASSWORD/.test(n))).toEqual([]);
        expect(env.filter((e) => e.valueFrom !== undefined)).toEqual([]);
        // The migration Job gets the database secret only; serve gets the App's secrets too.
        const migration = container.args?.[0] === "database";
        if (migration) expect(names.filter((n) => n.startsWith("SERVICE_FORGE_"))).toEqual([]);
        const files = migration ? ["SERVICE_DATABASE_URL_FILE"] : ["SERVICE_FORGE_PRIVATE_KEY_FILE", "SERVICE_FORGE_WEBHOOK_SECRET_FILE", "SERVICE_DATABASE_URL_FILE"];
        for (const name of files) {
          const path = env.find((e) => e.name === name)?.value;
          expect(path, `${kind}: ${name}`).toBeString();
          const file = secretFileAt(pod, container, path);
          expect(file, `${kind}: ${name} at ${path}`).not.toBeNull();
          expect(file!.readOnly).toBe(true);
        }
        for (const mount of container.volumeMounts ?? []) expect(mount.readOnly, `${kind}: ${mount.mountPath}`).toBe(true);
        expect(JSON.stringify(container)).not.toMatch(/postgres(ql)?:\/\/|BEGIN [A-Z ]*PRIVATE KEY/);
      }
      for (const volume of pod.volumes ?? []) expect(volume.secret?.defaultMode, `${kind}: ${volume.name}`).toBe(0o440);
    }
  });

  test("a migration Job runs `database migrate` once with the serving image", () => {
    const pod = job().spec.template.spec;
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.containers).toHaveLength(1);
    expect(pod.containers[0].args).toEqual(["database", "migrate"]);
    expect(pod.containers[0].image).toBe(deployment().spec.template.spec.containers[0].image);
    expect(deployment().spec.template.spec.containers[0].args).toEqual(["serve"]);
  });

  test("only POST /webhooks/forge is exposed publicly", () => {
    const ingresses = byKind("Ingress");
    const paths = ingresses.flatMap((i) => i.spec.rules.flatMap((r: Obj) => r.http.paths));
    expect(paths.map((p: Obj) => [p.path, p.pathType])).toEqual([["/webhooks/forge", "Exact"]]);
    expect(ingresses.every((i) => i.spec.tls?.length > 0)).toBe(true);
    expect(ingresses.every((i) => i.spec.defaultBackend === undefined)).toBe(true);
    expect(one("Service").spec.type).toBe("ClusterIP");
    expect(readFileSync(MANIFEST, "utf8")).toContain("only\n# POST /webhooks/forge exposed publicly");
  });

  test("the containers' settings load under production validation with the secret files in place", () => {
    const keys = generateAppKeys();
    const files: Record<string, string> = {
      "codeowner-approval-forge/private-key.pem": keys.privateKey,
      "codeowner-approval-forge/webhook-secret": "a-webhook-secret-of-at-least-32-bytes\n",
      "codeowner-approval-database/database-url":
        "postgresql://service:pw@db.internal:5432/service?sslmode=verify-full&sslrootcert=/etc/codeowner-approval/database/ca.pem\n",
      "codeowner-approval-database/ca.pem": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
    };
    for (const [kind, pod] of podSpecs()) {
      const [container] = pod.containers;
      const env = Object.fromEntries((container.env as Obj[]).map((e) => [e.name, String(e.value)]));
      const readFile = (path: string) => {
        const file = secretFileAt(pod, container, path);
        const content = file && files[`${file.secretName}/${file.key}`];
        if (content === undefined || content === null) throw new Error(`ENOENT: ${path}`);
        return content;
      };
      const config = loadConfig(env, { readFile }, container.args?.[0] === "database" ? "database" : "service");
      expect(config.production, kind).toBe(true);
      expect(config.port).toBe(8080);
      expect(config.database).toMatchObject({ backend: "postgresql", host: "db.internal", tls: { mode: "verify-full", caFile: "/etc/codeowner-approval/database/ca.pem" } });
    }
  });
});
