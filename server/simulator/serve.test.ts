import { expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateAppKeys, mintAppJwt } from "./scenario.ts";

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
