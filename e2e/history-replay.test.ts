import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeRecordBody, encodeRecordBody } from "../server/records/codec.ts";
import type { RecordedFileRead } from "../server/records/schema.ts";
import { all, openStore, run } from "../server/store/index.ts";
import { BINARY, cleanEnv, ensureBinary } from "./support/binary.ts";
import { BACKENDS } from "./support/databases.ts";
import { replayEveryRecord } from "./support/replay-records.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Decision records replayed end to end (issue 28 item 4): the worker publishes against the forge simulator and records each
 * completing check; every record replays to itself from the simulator's blobs, and a record changed in the database does not.
 * (Every suite that runs the worker through e2e/support/service.ts or forge-rig.ts replays its records the same way when it
 * stops: e2e/support/replay-records.ts.)
 */
describe.each(BACKENDS)("decision record replay on %s", (backend) => {
  let h: ServiceHarness;
  afterEach(async () => h?.stop());

  /** fail on a new head, then alice and bob approve it: success. */
  async function publishFailureThenSuccess() {
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n", "docs/guide.md": "# guide\n" } });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
    await h.waitForDrainedQueue();
    return sha;
  }

  async function rows() {
    const store = openStore(h.database.target);
    try {
      return await store.execute(() => all<{ id: number; conclusion: string; body: Uint8Array }>("select id, conclusion, body from decision_records order by id"));
    } finally {
      await store.close();
    }
  }
  async function setBody(id: number, body: Uint8Array) {
    const store = openStore(h.database.target);
    try {
      await store.execute(() => run("update decision_records set body = $1 where id = $2", Buffer.from(body), id));
    } finally {
      await store.close();
    }
  }

  test("every record the worker wrote replays to itself; a tampered record does not", async () => {
    h = await startServiceHarness(backend);
    await publishFailureThenSuccess();
    const written = await rows();
    expect(written.map((r) => r.conclusion)).toEqual(expect.arrayContaining(["failure", "success"]));
    const clean = await replayEveryRecord(h.database.target, h.sim, h.scenario);
    expect(clean).toEqual({ replayed: written.length, failures: [] });

    // The success record, said to be a failure: replay reaches success and says so.
    const success = written.find((r) => r.conclusion === "success")!;
    const original = new Uint8Array(success.body);
    const body = decodeRecordBody(original);
    try {
      await setBody(success.id, encodeRecordBody({ ...body, conclusion: "failure" }).bytes);
      const tampered = await replayEveryRecord(h.database.target, h.sim, h.scenario);
      expect(tampered.failures).toEqual([expect.stringMatching(new RegExp(`^d${success.id} .* differs: conclusion: recorded failure, today success`))]);

      // A review taken out of the recorded inputs: today's owner sets differ from the recorded ones.
      const inputs = body.inputs!;
      const reviews = inputs.reviews.complete ? inputs.reviews.items : [];
      await setBody(success.id, encodeRecordBody({ ...body, inputs: { ...inputs, reviews: { complete: true, items: reviews.filter((r) => r.user?.login !== "bob") } } }).bytes);
      const fewer = await replayEveryRecord(h.database.target, h.sim, h.scenario);
      expect(fewer.failures).toHaveLength(1);
      expect(fewer.failures[0]).toMatch(/differs: conclusion: recorded success, today failure; .*owner set [^:]*@bob: recorded satisfied, today /);

      // A blob SHA the forge does not have: the record cannot be replayed.
      const codeowners = Object.entries(inputs.codeowners).find((entry): entry is [string, Extract<RecordedFileRead, { kind: "found" }>] => entry[1].kind === "found")!;
      await setBody(success.id, encodeRecordBody({ ...body, inputs: { ...inputs, codeowners: { ...inputs.codeowners, [codeowners[0]]: { ...codeowners[1], blob_sha: "0".repeat(40) } } } }).bytes);
      const gone = await replayEveryRecord(h.database.target, h.sim, h.scenario);
      expect(gone.failures).toEqual([expect.stringContaining(`cannot be replayed: the blob ${"0".repeat(40)} of the code-owners file`)]);
    } finally {
      // Put back as written: the harness replays every record again when it stops.
      await setBody(success.id, original);
    }
  }, 60_000);

  if (backend === "sqlite") {
    test("the compiled binary answers why a head passed, replays its record (exit 0) and exports its records", async () => {
      ensureBinary();
      h = await startServiceHarness(backend);
      const head = await publishFailureThenSuccess();
      const dir = mkdtempSync(join(tmpdir(), "svc-history-"));
      try {
        writeFileSync(join(dir, "key.pem"), h.scenario.privateKey);
        const env = { ...cleanEnv(), SERVICE_DATABASE_URL: h.database.url, SERVICE_FORGE_API_URL: h.sim.url, SERVICE_FORGE_APP_ID: String(h.scenario.appId), SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem") };
        const exec = async (args: string[]) => {
          const proc = Bun.spawn([BINARY, ...args], { cwd: "/", env, stdout: "pipe", stderr: "pipe" });
          const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
          return { stdout, stderr, exitCode };
        };
        const repository = `${h.scenario.org}/${h.scenario.repo}`;
        const passed = await exec(["history", "--repository", repository, "--commit", head]);
        expect({ exitCode: passed.exitCode, stderr: passed.stderr }).toEqual({ exitCode: 0, stderr: "" });
        expect(passed.stdout).toContain(`${repository} at ${head}: no merge recorded; the decisions on this head:`);
        expect(passed.stdout).toMatch(/: success, published .*\n(?:.*\n)*\s+approved by @bob \(user \d+\) /);
        // The auditor's question: why did this commit merge?
        const merged = await h.sim.control.mergePullRequest({ owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber, by: "alice" });
        const mergeCommit = merged.merged!.commitSha;
        await waitUntil(async () => (await exec(["history", "--repository", repository, "--commit", mergeCommit])).exitCode === 0, "the merge record");
        const why = await exec(["history", "--repository", repository, "--commit", mergeCommit]);
        expect(why.stdout).toMatch(new RegExp(`^merge m\\d+ of ${repository}#${h.scenario.pullNumber}: merge commit ${mergeCommit}, merged by @alice `, "m"));
        expect(why.stdout).toMatch(/approved: the service's check concluded success on the head at merge \(d\d+\)\n(?:.*\n)*\s+decision d\d+ on .*: success/);
        expect(why.stdout).toMatch(/CODEOWNERS: \.forge\/CODEOWNERS \(\d+ bytes\) at blob [0-9a-f]{40}/);
        const exported = await exec(["history", "export", "--repository", repository]);
        expect(exported.exitCode).toBe(0);
        const lines = exported.stdout.trim().split("\n").map((line) => JSON.parse(line) as { id: string; schema_version: number; conclusion: string });
        expect(lines.every((line) => line.schema_version === 1)).toBe(true);
        const success = lines.filter((line) => line.conclusion === "success").at(-1)!;
        const replay = await exec(["history", "replay", success.id]);
        expect({ exitCode: replay.exitCode, stderr: replay.stderr }).toEqual({ exitCode: 0, stderr: "" });
        expect(replay.stdout).toContain(`replay of ${success.id} on ${repository}#${h.scenario.pullNumber} at ${head}: same`);
        const document = await exec(["history", "replay", success.id, "--json"]);
        expect(JSON.parse(document.stdout)).toMatchObject({ format: "service-evidence", generatedBy: "service history replay", decision: { conclusion: "success" }, replay: { outcome: "same" } });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 60_000);
  }
});
