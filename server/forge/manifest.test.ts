import { afterAll, beforeAll, expect, test } from "bun:test";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { createForgeClient } from "./client.ts";
import { convertAppManifest } from "./manifest.ts";
import { bufferLogger, CHECK_NAME } from "./test-support.ts";

let sim: ForgeSimulator;
beforeAll(() => { sim = startForgeSimulator(); sim.control.createOrganization({ login: "acme" }); });
afterAll(async () => { await sim.stop(); });

test("a manifest code converts once into credentials the forge accepts", async () => {
  const { code } = sim.control.mintManifestCode({ manifest: { name: "Acme Approval", hook_attributes: { url: "https://svc.example/webhooks/forge" } }, owner: "acme" });
  const credentials = await convertAppManifest({ apiUrl: sim.url, requestTimeoutMs: 2000 }, code);
  expect(credentials).toMatchObject({ slug: "acme-approval", name: "Acme Approval", ownerLogin: "acme", ownerType: "Organization" });
  expect(credentials.pem).toContain("BEGIN RSA PRIVATE KEY");
  expect(credentials.webhookSecret.length).toBeGreaterThanOrEqual(32);
  const client = createForgeClient({ apiUrl: sim.url, appId: credentials.id, privateKey: credentials.pem, requestTimeoutMs: 2000, checkName: CHECK_NAME, logger: bufferLogger().logger });
  expect(await client.getApp()).toEqual({ id: credentials.id, slug: "acme-approval" });
  await expect(convertAppManifest({ apiUrl: sim.url, requestTimeoutMs: 2000 }, code)).rejects.toMatchObject({ kind: "not_found" });
});

test("an incomplete credential response is refused", async () => {
  const incomplete = (async () => Response.json({ id: 5, slug: "x", name: "x", html_url: "h", client_id: "c", client_secret: "s", webhook_secret: "w" }, { status: 201 })) as unknown as typeof fetch;
  await expect(convertAppManifest({ apiUrl: sim.url, requestTimeoutMs: 2000, fetch: incomplete }, "code")).rejects.toMatchObject({ kind: "permanent" });
});
