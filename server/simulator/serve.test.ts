import { expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateAppKeys, mintAppJwt } from "./scenario.ts";
import { buildManifest } from "../setup/manifest.ts";
import { seedTrial } from "./serve.ts";
import { startForgeSimulator } from "./simulator.ts";

test("the simulator runs as a process, seeded for a configured App ID, and stops on SIGTERM", async () => {
  const dir = mkdtempSync(join(tmpdir(), "forge-sim-"));
  const keys = generateAppKeys();
  writeFileSync(join(dir, "key.pem"), keys.privateKey);
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "serve.ts"), "--seed", "--app-private-key-file", join(dir, "key.pem"), "--app-id", "4242"], { stdout: "pipe", stderr: "pipe" });
  try {
    const reader = child.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) { const { value, done } = await reader.read(); if (done) break; text += new TextDecoder().decode(value); }
    const info = JSON.parse(text) as { url: string; appId: number; installationId: number; repository: string };
    expect(info).toMatchObject({ appId: 4242, repository: "acme/web" });
    const res = await fetch(`${info.url}/app`, { headers: { authorization: `Bearer ${mintAppJwt(4242, keys.privateKey)}` } });
    expect(((await res.json()) as { id: number }).id).toBe(4242);
  } finally {
    child.kill("SIGTERM");
  }
  expect(await child.exited).toBe(0);
});

test("the trial forge: acme/web opted in, a feature branch, and an App created from a manifest for acme installed on it at once", async () => {
  const sim = startForgeSimulator({ realClock: true });
  try {
    await seedTrial(sim);
    const c = sim.control;
    expect(c.mustRepo("acme", "web").branches.has("feature")).toBe(true);
    const manifest = JSON.stringify(buildManifest({ publicUrl: "http://127.0.0.1:8080", setupUrl: "http://127.0.0.1:8080" }, "acme"));
    const shown = await fetch(`${sim.url}/organizations/acme/settings/apps/new?state=s`, { method: "POST", body: new URLSearchParams({ manifest }) });
    const pending = /name="pending" value="([0-9a-f]+)"/.exec(await shown.text())![1]!;
    const confirmed = await fetch(`${sim.url}/settings/apps/new/confirm`, { method: "POST", body: new URLSearchParams({ pending }), redirect: "manual" });
    expect(confirmed.status).toBe(302);
    const app = [...c.state.apps.values()].find((a) => a.slug === "acme-code-owner-approval")!;
    expect([...c.state.installations.values()].filter((i) => i.appId === app.id).map((i) => i.accountLogin)).toEqual(["acme"]);
    // An App created by hand for another owner is not installed anywhere.
    const other = c.createApp({ slug: "elsewhere", owner: "someone-else", publicKeyPem: generateAppKeys().publicKey });
    expect([...c.state.installations.values()].filter((i) => i.appId === other.id)).toEqual([]);
  } finally {
    await sim.stop();
  }
});
