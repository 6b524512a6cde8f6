import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { loadConfig } from "../../server/config/index.ts";
import { startForgeSimulator, type ForgeSimulator } from "../../server/simulator/simulator.ts";
import { fences } from "../docs/markdown.ts";
import { ensureBinary, ROOT, runBinary, startBinary, type RunningBinary } from "../support/binary.ts";

/**
 * Creating the App for a deployment made from deploy/kubernetes (docs/operations.md "Creating the App from the cluster"):
 * the one-off setup pod (deploy/kubernetes/setup.yaml) is hardened like the example's pods and out of reach of its Service,
 * ingress and network; its settings load; the document's commands name that pod, its secret and its port; and the compiled
 * service run with the pod's settings, reached on loopback as through `kubectl port-forward`, creates an App on the forge
 * simulator whose webhook URL is the ingress's public HTTPS address and whose callback is the forwarded loopback address.
 */
type Obj = Record<string, any>;
const parse = (file: string) => (Bun.YAML.parse(readFileSync(join(ROOT, "deploy", "kubernetes", file), "utf8")) as Obj[] | Obj);
const setupPod = parse("setup.yaml") as Obj;
const example = (parse("codeowner-approval.yaml") as Obj[]).filter(Boolean);
const ofKind = (kind: string) => example.find((d) => d.kind === kind)!;
const container = setupPod.spec.containers[0] as Obj;
const envOf = (c: Obj) => Object.fromEntries((c.env as Obj[]).map((e) => [e.name, String(e.value)]));
const commands = (info: string) => {
  const block = fences(join(ROOT, "docs", "operations.md")).find((f) => f.info === info);
  if (!block) throw new Error(`docs/operations.md has no \`\`\`${info} block`);
  return block.text.trim().split("\n");
};
const ingressHost = () => ofKind("Ingress").spec.rules[0].host as string;

describe("the setup pod of the Kubernetes example", () => {
  test("is a single pod, hardened like the example's: non-root 65532, read-only, no capabilities, no token", () => {
    expect(setupPod.kind).toBe("Pod");
    expect(setupPod.spec.automountServiceAccountToken).toBe(false);
    expect(setupPod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });
    for (const c of [...setupPod.spec.initContainers, ...setupPod.spec.containers]) {
      expect(c.securityContext, c.name).toMatchObject({
        runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"] }, seccompProfile: { type: "RuntimeDefault" },
      });
      expect(c.image).toBe(ofKind("Deployment").spec.template.spec.containers[0].image);
    }
  });

  test("is out of reach of the Service, the ingress and the cluster network: another component label, and loopback only", () => {
    const labels = setupPod.metadata.labels as Record<string, string>;
    const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect(selects(ofKind("Service").spec.selector)).toBe(false);
    expect(selects(ofKind("NetworkPolicy").spec.podSelector.matchLabels)).toBe(false);
    expect(envOf(container).SERVICE_HOST).toBe("127.0.0.1");
    // The shipped ingress still exposes only the webhook route.
    expect(ofKind("Ingress").spec.rules.flatMap((r: Obj) => r.http.paths.map((p: Obj) => p.path))).toEqual(["/webhooks/forge"]);
  });

  test("its settings load: setup on, the ingress's host as the public URL, the forwarded loopback address as the setup URL", () => {
    const env = envOf(container);
    const mount = (container.volumeMounts as Obj[]).find((m) => m.mountPath === posix.dirname(env.SERVICE_SETUP_STATE_SECRET_FILE!))!;
    expect(mount.readOnly).toBe(true);
    const volume = (setupPod.spec.volumes as Obj[]).find((v) => v.name === mount.name)!;
    expect(volume.secret.items).toEqual([{ key: "state-secret", path: posix.basename(env.SERVICE_SETUP_STATE_SECRET_FILE!) }]);
    const config = loadConfig(env, { readFile: (path) => { if (path === env.SERVICE_SETUP_STATE_SECRET_FILE) return "s".repeat(64); throw new Error(`ENOENT ${path}`); } });
    expect(config.setup).toMatchObject({ enabled: true, publicUrl: `https://${ingressHost()}`, setupUrl: `http://127.0.0.1:${container.ports[0].containerPort}` });
    expect(config.port).toBe(container.ports[0].containerPort);
  });

  test("the document's commands create its secret, apply it and forward the setup URL's port to the pod's", () => {
    const run = commands("sh kubernetes-setup");
    const secretVolume = (setupPod.spec.volumes as Obj[]).find((v) => v.secret)!.secret;
    expect(run).toContain(`kubectl create secret generic ${secretVolume.secretName} --from-file=${secretVolume.items[0].key}=./setup-state-secret`);
    expect(run).toContain("kubectl apply -f deploy/kubernetes/setup.yaml");
    const forward = run.map((line) => /^kubectl port-forward pod\/(\S+) (\d+):(\d+)$/.exec(line)).find(Boolean)!;
    expect(forward[1]).toBe(setupPod.metadata.name);
    expect(`http://127.0.0.1:${forward[2]}`).toBe(envOf(container).SERVICE_SETUP_URL!);
    expect(Number(forward[3])).toBe(container.ports[0].containerPort);
  });

  test("the document's commands afterwards give the Deployment its forge secret and remove the pod and its secret", () => {
    const run = commands("sh kubernetes-after-setup");
    const forge = (ofKind("Deployment").spec.template.spec.volumes as Obj[]).find((v) => v.name === "forge")!.secret;
    const files = (forge.items as Obj[]).map((i) => `--from-file=${i.key}=./${i.key}`).join(" ");
    expect(run).toContain(`kubectl create secret generic ${forge.secretName} ${files}`);
    expect(run).toContain("kubectl delete -f deploy/kubernetes/setup.yaml");
    expect(run).toContain(`kubectl delete secret ${(setupPod.spec.volumes as Obj[]).find((v) => v.secret)!.secret.secretName}`);
  });
});

describe("the setup pod's settings, run by the compiled service and reached as through kubectl port-forward", () => {
  let dir: string;
  let sim: ForgeSimulator;
  let service: RunningBinary | undefined;
  beforeAll(() => {
    ensureBinary();
    dir = mkdtempSync(join(tmpdir(), "svc-k8s-setup-"));
    sim = startForgeSimulator();
  });
  afterAll(async () => {
    await service?.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the App gets the ingress's HTTPS webhook URL and sends the browser back to the forwarded loopback address", async () => {
    const env = envOf(container);
    // The pod's files at temporary paths, its forge at the simulator, and a free local port standing for the forwarded one.
    const stateFile = join(dir, "state-secret");
    writeFileSync(stateFile, "s".repeat(64), { mode: 0o400 });
    const database = `sqlite:${join(dir, "setup.db")}`;
    const init = envOf(setupPod.spec.initContainers[0]);
    expect(init.SERVICE_DATABASE_URL).toBe(env.SERVICE_DATABASE_URL!);
    expect(runBinary(setupPod.spec.initContainers[0].args, { SERVICE_DATABASE_URL: database }).exitCode).toBe(0);
    const free = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const port = String(free.port);
    await free.stop();
    service = await startBinary({
      ...env, SERVICE_DATABASE_URL: database, SERVICE_SETUP_STATE_SECRET_FILE: stateFile, SERVICE_PORT: port,
      SERVICE_SETUP_URL: `http://127.0.0.1:${port}`, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_WEB_URL: sim.url,
    });
    sim.control.createOrganization({ login: "acme" });

    // The administrator's browser: /setup on the forwarded address, the form posted to the forge, "Create", the redirect back.
    const started = await fetch(`http://127.0.0.1:${port}/setup?organization=acme`);
    expect(started.status).toBe(200);
    const cookie = (started.headers.get("set-cookie") ?? "").split(";")[0]!;
    const page = await started.text();
    const action = /<form method="post" action="([^"]+)">/.exec(page)![1]!.replace(/&amp;/g, "&");
    const manifest = /name="manifest" value="([^"]+)"/.exec(page)![1]!.replace(/&quot;/g, '"').replace(/&amp;/g, "&");
    expect(JSON.parse(manifest)).toMatchObject({
      url: `https://${ingressHost()}`, hook_attributes: { url: `https://${ingressHost()}/webhooks/forge`, active: true },
      redirect_url: `http://127.0.0.1:${port}/setup/callback`,
    });
    const shown = await fetch(action, { method: "POST", body: new URLSearchParams({ manifest }), redirect: "manual" });
    const pending = /name="pending" value="([0-9a-f]+)"/.exec(await shown.text())![1]!;
    const confirmed = await fetch(`${sim.url}/settings/apps/new/confirm`, { method: "POST", body: new URLSearchParams({ pending }), redirect: "manual" });
    const back = new URL(confirmed.headers.get("location")!);
    expect(back.origin).toBe(`http://127.0.0.1:${port}`);
    const callback = await fetch(back, { headers: { cookie } });
    expect(callback.status).toBe(200);
    const credentials = await callback.text();
    const appId = Number(/<[^>]+id="app-id"[^>]*>(\d+)</.exec(credentials)![1]);
    expect(credentials).toContain("BEGIN RSA PRIVATE KEY");
    expect(sim.control.mustApp(appId)).toMatchObject({ webhookUrl: `https://${ingressHost()}/webhooks/forge` });
  }, 60_000);
});
