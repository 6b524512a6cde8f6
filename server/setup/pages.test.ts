import { expect, test } from "bun:test";
import type { AppCredentials } from "../forge/index.ts";
import { buildManifest } from "./manifest.ts";
import { serviceSettings, setupPage, successPage } from "./pages.ts";

const credentials: AppCredentials = {
  id: 42, slug: "approval", name: "Approval", htmlUrl: "https://forge.example/apps/approval", ownerLogin: "acme", ownerType: "Organization",
  clientId: "Iv1.0123456789abcdef", clientSecret: "client-secret-value", webhookSecret: "webhook-secret-value", pem: "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n",
};
const input = (clientSecret: string | null) => ({ credentials: { ...credentials, clientSecret }, forgeApiUrl: "https://api.forge.example", forgeWebUrl: "https://forge.example" });
const layout = async (response: Response) => /<pre id="file-layout">([^<]*)<\/pre>/.exec(await response.text())![1]!;

test("the success page lays out the client secret's file and names the sign-in settings when the forge sent a client secret", async () => {
  const files = (await layout(successPage(input("client-secret-value")))).split("\n");
  expect(files.slice(1).map((line) => line.slice(0, 4) + line.slice(4).trim().split(" ")[0])).toEqual(["├── private-key.pem", "├── webhook-secret", "└── client-secret"]);
  expect(serviceSettings(input("client-secret-value"))).toContain("SERVICE_FORGE_CLIENT_ID=Iv1.0123456789abcdef\nSERVICE_FORGE_CLIENT_SECRET_FILE=/etc/codeowner-approval/client-secret\n");
});

test("without a client secret from the forge the file layout ends at the webhook secret and names no sign-in setting", async () => {
  const files = (await layout(successPage(input(null)))).split("\n");
  expect(files.slice(1).map((line) => line.slice(0, 4) + line.slice(4).trim().split(" ")[0])).toEqual(["├── private-key.pem", "└── webhook-secret"]);
  expect(serviceSettings(input(null))).not.toContain("SERVICE_FORGE_CLIENT");
});

test("the success page says the client secret, like the other secrets, must be kept: it makes sign-in sessions", async () => {
  const html = await successPage(input("client-secret-value")).text();
  expect(html).toContain("anyone with\nthe client secret can make sessions that read decision records");
});

test("the setup page shows the sign-in callback URL the manifest asks the forge for", async () => {
  const manifest = buildManifest({ publicUrl: "https://hooks.example", setupUrl: "https://service.internal:8443" }, null);
  const html = await setupPage({ manifest, action: "https://forge.example/settings/apps/new", organization: null, forgeWebUrl: "https://forge.example" }).text();
  expect(html).toContain('<code id="sign-in-callback-url">https://service.internal:8443/auth/callback</code>');
});
