import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fences } from "./docs/markdown.ts";
import { BINARY, cleanEnv, ensureBinary, ROOT } from "./support/binary.ts";
import { signInAs } from "./support/sign-in.ts";

/**
 * `service demo` as `npm start` runs it (the compiled executable, until Ctrl-C): the README shows exactly what it prints
 * (commit SHAs, times, ports and its temporary directory aside), the decisions page answers while it runs, and the
 * `service history` commands it prints, run as printed after it stopped, find both merges in the database it used: the
 * approved one and the one merged without approval.
 */
let printed = "";
let decisionsPage = { withoutSession: 0, status: 0, unapproved: [] as unknown[], erinSees: [] as unknown[] };
let dataDir = "";

beforeAll(async () => {
  ensureBinary();
  const demo = Bun.spawn([BINARY, "demo"], { cwd: ROOT, env: { ...cleanEnv(), SERVICE_PORT: "0" }, stdout: "pipe", stderr: "pipe" });
  const reader = demo.stdout.getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + 60_000;
  while (!printed.includes("run until Ctrl-C.\n") && Date.now() < deadline) {
    const { done, value } = await reader.read();
    if (done) break;
    printed += decoder.decode(value, { stream: true });
  }
  dataDir = /SERVICE_DATABASE_URL=sqlite:(\S+)\/demo\.db /.exec(printed)?.[1] ?? "";
  const page = /Decisions page: (\S+);/.exec(printed)?.[1];
  if (page) {
    const service = new URL(page).origin;
    // Signing in as the demo says (alice reads acme/web); erin, a member of the organization without access to it, reads none.
    const alice = await signInAs(service, "alice");
    const erin = await signInAs(service, "erin");
    const items = async (cookie: string) => ((await (await fetch(`${service}/api/decisions?unapproved=true`, { headers: { cookie } })).json()) as { items: unknown[] }).items;
    decisionsPage = {
      withoutSession: (await fetch(page, { redirect: "manual" })).status,
      status: (await fetch(page, { headers: { cookie: alice } })).status,
      unapproved: await items(alice),
      erinSees: await items(erin),
    };
  }
  demo.kill("SIGINT");
  expect(await demo.exited).toBe(0);
  reader.releaseLock();
}, 90_000);

afterAll(() => {
  if (dataDir.startsWith(join(tmpdir(), "service-demo-"))) rmSync(dataDir, { recursive: true, force: true });
});

/** What varies between runs: SHAs, times, loopback ports, the temporary directory, decision record numbers (a closed pull
 *  request's check is evaluated once more after its merge, in the background). */
const normal = (text: string) =>
  text
    .replace(/\b[0-9a-f]{40}\b/g, "<sha>")
    .replace(/\b[0-9a-f]{7}\b(…?)/g, "<short-sha>$1")
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b/g, "<time>")
    .replace(/http:\/\/127\.0\.0\.1:\d+/g, "http://127.0.0.1:<port>")
    .replace(/(?:\/[^\s/]+)*\/service-demo-[A-Za-z0-9]+/g, "<dir>")
    .replace(/\(d\d+\)/g, "(<decision>)");

test("the README's example output is what the demo prints", () => {
  const block = fences(join(ROOT, "README.md")).find((f) => f.info === "text demo-output");
  expect(block).toBeDefined();
  expect(printed).toContain("run until Ctrl-C.");
  expect(normal(printed)).toBe(normal(block!.text));
});

test("the demo's times read in order: each merge is recorded after the approval and the decision it relies on", () => {
  const times = [...printed.matchAll(/\bat (\d{4}-\d\d-\d\dT[\d:.]+Z)/g)].map((m) => Date.parse(m[1]!));
  expect(times).toHaveLength(2);
  expect(times[1]!).toBeGreaterThan(times[0]!);
  // The forge's clock is the real one: the merges happened during this test run, not at a fixed date.
  for (const time of times) expect(Math.abs(Date.now() - time)).toBeLessThan(120_000);
});

test("the decisions page answers while the demo runs and, signed in as alice, lists the unapproved merge", () => {
  expect(decisionsPage.withoutSession).toBe(303); // to sign in first
  expect(decisionsPage.erinSees).toEqual([]);
  expect(decisionsPage.status).toBe(200);
  expect(decisionsPage.unapproved).toHaveLength(1);
  expect(decisionsPage.unapproved[0]).toMatchObject({ kind: "merge", pull_request: 2, merged_by: { login: "dave" }, unapproved: true });
});

test("the printed service history commands, run as printed after the demo stopped, find both merges in its database", () => {
  const commands = printed.split("\n").filter((line) => line.startsWith("  SERVICE_DATABASE_URL=")).map((line) => line.trim());
  expect(commands).toHaveLength(2);
  expect(dataDir.startsWith(join(tmpdir(), "service-demo-"))).toBe(true);
  for (const command of commands) expect(command).toStartWith(`SERVICE_DATABASE_URL=sqlite:${dataDir}/demo.db dist/service history --repository acme/web --commit `);
  const run = (command: string) => {
    const result = Bun.spawnSync(["sh", "-c", command], { cwd: ROOT, env: cleanEnv(), stdout: "pipe", stderr: "pipe" });
    expect({ command, exitCode: result.exitCode }).toEqual({ command, exitCode: 0 });
    return result.stdout.toString();
  };
  const [approved, unapproved] = commands.map(run) as [string, string];
  expect(approved).toMatch(/^merge m1 of acme\/web#1: .*merged by @alice/m);
  expect(approved).toContain("approved: the service's check concluded success on the head at merge");
  expect(approved).not.toContain("UNAPPROVED");
  // Times read in order: the approvals were submitted, then the decision published, then the commit merged.
  const time = (pattern: RegExp) => [...approved.matchAll(pattern)].map((m) => Date.parse(m[1]!));
  const [mergedAt] = time(/^merge m1 .* at (\S+Z)$/gm);
  const [publishedAt] = time(/^ {2}decision d\d+ on acme\/web#1: success, published (\S+Z)$/gm);
  const submitted = time(/submitted (\S+Z)$/gm);
  expect(submitted).toHaveLength(2);
  expect(Math.max(...submitted)).toBeLessThan(publishedAt!);
  expect(publishedAt!).toBeLessThan(mergedAt!);
  expect(unapproved).toMatch(/^merge m2 of acme\/web#2: .*merged by @dave/m);
  expect(unapproved).toContain("UNAPPROVED MERGE");
});
