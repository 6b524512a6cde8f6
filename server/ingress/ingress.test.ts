import { afterEach, describe, expect, test } from "bun:test";
import {
  checkRunEvent, INSTALLATION, installationRepositoriesEvent, labelEvent, mergeGroupEvent, POLICY_REPO, pullRequestEvent, pushEvent, reviewEvent, SHA_A, SHA_B, signedDelivery, WEB,
} from "../../e2e/support/payloads.ts";
import { BACKENDS } from "../../e2e/support/databases.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";
import { MAX_WEBHOOK_BODY_BYTES } from "./limits.ts";

/** Webhook ingress against a real database on both backends (spec "POST /webhooks/forge" and the webhook rows of "Errors"). */
describe.each(BACKENDS)("webhook ingress on %s", (backend) => {
  let h: Harness;
  afterEach(async () => h?.close());
  const failures = async (reason: string) => {
    const text = await h.metrics.registry.getSingleMetricAsString("service_webhook_failures_total");
    return Number(text.match(new RegExp(`reason="${reason}"} (\\d+)`))?.[1] ?? 0);
  };

  describe("rejections before parsing", () => {
    test("a missing signature header is 401", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("pull_request", "d1", pullRequestEvent("opened"), { headers: { "x-hub-signature-256": null } })).status).toBe(401);
      expect(await failures("signature")).toBe(1);
    });
    test("a malformed signature header is 401", async () => {
      h = await ingressHarness(backend);
      for (const bad of ["sha256=", "sha1=" + "a".repeat(40), "sha256=" + "A".repeat(64), "sha256=" + "a".repeat(63), "a".repeat(71)]) {
        expect((await h.send("pull_request", "d1", pullRequestEvent("opened"), { headers: { "x-hub-signature-256": bad } })).status).toBe(401);
      }
    });
    test("a signature over other bytes is 401, and the body is never parsed", async () => {
      h = await ingressHarness(backend);
      const reply = await h.send("pull_request", "d1", "{not json", { headers: { "x-hub-signature-256": signedDelivery("another-secret-0123456789abcdef0123", "pull_request", "d1", "{not json").headers["x-hub-signature-256"]! } });
      expect(reply.status).toBe(401);
      expect(await failures("json")).toBe(0);
    });
    test("a signature over a re-serialised body does not verify the exact bytes", async () => {
      h = await ingressHarness(backend);
      const payload = pullRequestEvent("opened");
      const pretty = JSON.stringify(payload, null, 2);
      const reply = await h.send("pull_request", "d1", payload, { body: pretty });
      expect(reply.status).toBe(401);
    });
    test("the signature covers the exact bytes: a byte-order mark is part of them", async () => {
      h = await ingressHarness(backend);
      const json = new TextEncoder().encode(JSON.stringify({ zen: "hi" }));
      const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...json]);
      expect((await h.send("ping", "d-bom", withBom)).status).toBe(202);
      const signedWithoutBom = signedDelivery(SECRET, "ping", "d-bom", json).headers["x-hub-signature-256"]!;
      expect((await h.send("ping", "d-bom", withBom, { headers: { "x-hub-signature-256": signedWithoutBom } })).status).toBe(401);
    });
    for (const [name, headers] of [
      ["a missing delivery header", { "x-forge-delivery": null }],
      ["a missing event header", { "x-forge-event": null }],
      ["a delivery header over 128 characters", { "x-forge-delivery": "d".repeat(129) }],
      ["an event header over 128 characters", { "x-forge-event": "e".repeat(129) }],
    ] as const) {
      test(`${name} is 400`, async () => {
        h = await ingressHarness(backend);
        expect((await h.send("pull_request", "d1", pullRequestEvent("opened"), { headers })).status).toBe(400);
        expect(await failures("headers")).toBe(1);
      });
    }
    test("GitHub's X-GitHub-Event and X-GitHub-Delivery are read when the neutral headers are absent", async () => {
      h = await ingressHarness(backend);
      const reply = await h.send("pull_request", "ignored", pullRequestEvent("opened"), { headers: { "x-forge-event": null, "x-forge-delivery": null, "x-github-event": "pull_request", "x-github-delivery": "gh-1" } });
      expect(reply).toEqual({ status: 202, body: { accepted: true, queued: true } });
      expect(await h.rows("select delivery_id, event, action from webhook_deliveries")).toEqual([{ delivery_id: "gh-1", event: "pull_request", action: "opened" }]);
    });
    test("each header of a pair may come from either name, and both names with the same value are accepted", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("pull_request", "d1", pullRequestEvent("opened"), { headers: { "x-forge-event": null, "x-github-event": "pull_request" } })).status).toBe(202);
      expect((await h.send("pull_request", "d2", pullRequestEvent("opened"), { headers: { "x-forge-delivery": null, "x-github-delivery": "d2" } })).status).toBe(202);
      expect((await h.send("pull_request", "d3", pullRequestEvent("opened"), { headers: { "x-github-event": "pull_request", "x-github-delivery": "d3" } })).status).toBe(202);
      expect(await h.rows("select delivery_id from webhook_deliveries order by delivery_id")).toEqual([{ delivery_id: "d1" }, { delivery_id: "d2" }, { delivery_id: "d3" }]);
      expect(await failures("headers")).toBe(0);
    });
    for (const [name, headers] of [
      ["an X-Forge-Event and X-GitHub-Event that differ", { "x-github-event": "push" }],
      ["an X-Forge-Delivery and X-GitHub-Delivery that differ", { "x-github-delivery": "other" }],
      ["an empty X-Forge-Event beside an X-GitHub-Event", { "x-forge-event": "", "x-github-event": "pull_request" }],
      ["a missing neutral event header with an empty X-GitHub-Event", { "x-forge-event": null, "x-github-event": "" }],
      ["an X-GitHub-Delivery over 128 characters", { "x-forge-delivery": null, "x-github-delivery": "d".repeat(129) }],
      ["an X-GitHub-Event over 128 characters", { "x-forge-event": null, "x-github-event": "e".repeat(129) }],
    ] as const) {
      test(`${name} is 400 and stores nothing`, async () => {
        h = await ingressHarness(backend);
        expect((await h.send("pull_request", "d1", pullRequestEvent("opened"), { headers })).status).toBe(400);
        expect(await failures("headers")).toBe(1);
        expect(await h.count("webhook_deliveries")).toBe(0);
      });
    }
    test("GitHub headers of exactly 128 characters are accepted", async () => {
      h = await ingressHarness(backend);
      const reply = await h.send("x", "y", { zen: "x" }, { headers: { "x-forge-event": null, "x-forge-delivery": null, "x-github-event": "e".repeat(128), "x-github-delivery": "d".repeat(128) } });
      expect(reply).toEqual({ status: 202, body: { accepted: true, queued: false } });
    });
    test("headers of exactly 128 characters are accepted", async () => {
      h = await ingressHarness(backend);
      const reply = await h.send("e".repeat(128), "d".repeat(128), { zen: "x" });
      expect(reply).toEqual({ status: 202, body: { accepted: true, queued: false } });
    });
    test("an invalid Content-Length is 400", async () => {
      h = await ingressHarness(backend);
      for (const value of ["abc", "-1", "1.5", "12 34"]) {
        expect((await h.send("ping", "d1", { zen: "x" }, { headers: { "content-length": value } })).status).toBe(400);
      }
      expect(await failures("content_length")).toBe(4);
    });
    test("a body shorter or longer than its declared Content-Length is 400", async () => {
      h = await ingressHarness(backend);
      const length = JSON.stringify({ zen: "x" }).length;
      for (const declared of [length - 1, length + 1]) {
        expect((await h.send("ping", "d1", { zen: "x" }, { headers: { "content-length": String(declared) } })).status).toBe(400);
      }
      expect(await failures("content_length")).toBe(2);
    });
    test("a declared Content-Length over 10 MiB is 413 without reading the body", async () => {
      h = await ingressHarness(backend);
      let pulled = 0;
      const body = new ReadableStream({ pull(controller) { pulled++; controller.enqueue(new Uint8Array(1024)); } });
      const reply = await h.send("ping", "d1", {}, { headers: { "content-length": String(MAX_WEBHOOK_BODY_BYTES + 1) }, body });
      expect(reply.status).toBe(413);
      expect(pulled).toBeLessThanOrEqual(1);
    });
    test("an 11 MiB chunked body is refused at 10 MiB while streaming, without reading the rest", async () => {
      h = await ingressHarness(backend);
      const chunk = new Uint8Array(64 * 1024);
      let sent = 0;
      const body = new ReadableStream({
        pull(controller) {
          if (sent >= 11 * 1024 * 1024) return controller.close();
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      const reply = await h.send("ping", "d1", {}, { headers: { "content-length": null }, body });
      expect(reply.status).toBe(413);
      expect(sent).toBeLessThan(MAX_WEBHOOK_BODY_BYTES + 3 * chunk.byteLength);
      expect(await failures("too_large")).toBe(1);
    });
    test("a body of exactly 10 MiB is read and verified", async () => {
      h = await ingressHarness(backend);
      const text = JSON.stringify({ zen: "x".repeat(MAX_WEBHOOK_BODY_BYTES - 10) });
      expect(new TextEncoder().encode(text).byteLength).toBe(MAX_WEBHOOK_BODY_BYTES);
      expect((await h.send("ping", "d1", text)).status).toBe(202);
    });
    test("no webhook secret configured is 503", async () => {
      h = await ingressHarness(backend, { secret: null });
      expect((await h.send("pull_request", "d1", pullRequestEvent("opened"))).status).toBe(503);
      expect(await failures("not_configured")).toBe(1);
    });
  });

  describe("parsing and payload validation", () => {
    test("malformed JSON and non-object roots are 400", async () => {
      h = await ingressHarness(backend);
      for (const body of ["{", "[1,2]", '"text"', "null", "42", ""]) expect((await h.send("pull_request", "d1", body)).status).toBe(400);
      expect(await failures("json")).toBe(6);
    });
    test("a non-string action is 400", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("pull_request", "d1", { ...pullRequestEvent("opened"), action: 5 })).status).toBe(400);
    });
    test("a malformed head is 400 and leaves no partial fence", async () => {
      h = await ingressHarness(backend);
      const reply = await h.send("pull_request", "d1", pullRequestEvent("opened", { headSha: SHA_A.toUpperCase() }));
      expect(reply.status).toBe(400);
      expect(await h.count("webhook_deliveries")).toBe(0);
      expect(await h.count("head_generations")).toBe(0);
      expect(await h.count("jobs")).toBe(0);
      expect(await failures("payload")).toBe(1);
    });
    test("verified deliveries are counted by event and action with fixed label values", async () => {
      h = await ingressHarness(backend);
      await h.send("ping", "d1", { zen: "x" });
      await h.send("star", "d2", { action: "exploded" });
      const text = await h.metrics.registry.getSingleMetricAsString("service_webhooks_total");
      expect(text).toContain('service_webhooks_total{event="other",action="none"} 1');
      expect(text).toContain('service_webhooks_total{event="other",action="other"} 1');
    });
  });

  describe("durable acceptance", () => {
    test("a retained direct trigger with no evaluator configured is stored and answered 503", async () => {
      h = await ingressHarness(backend, { fastPath: null });
      const reply = await h.send("pull_request", "d1", pullRequestEvent("opened"));
      expect(reply.status).toBe(503);
      expect(await h.count("webhook_deliveries")).toBe(1);
      const [head] = await h.rows<{ shared_generation: number; invalidated_generation: number }>("select shared_generation, invalidated_generation from head_generations");
      expect(head).toEqual({ shared_generation: 1, invalidated_generation: 0 });
      expect(await h.count("jobs", "kind = 'head_invalidation'")).toBe(1);
      expect(await h.count("jobs", "kind = 'evaluation'")).toBe(1);
      // A redelivery while that invalidation is pending answers 503 again; nothing more is queued.
      expect((await h.send("pull_request", "d1", pullRequestEvent("opened"))).status).toBe(503);
      expect(await h.count("head_generations", "shared_generation = 1")).toBe(1);
    });

    test("delivery record, generation fence and work are written together", async () => {
      h = await ingressHarness(backend);
      await h.send("pull_request", "d1", pullRequestEvent("opened"));
      const [delivery] = await h.rows("select event, action, installation_id, repository_id, pull_number, head_sha, shared_generation from webhook_deliveries");
      expect(delivery).toEqual({ event: "pull_request", action: "opened", installation_id: INSTALLATION, repository_id: WEB.id, pull_number: 7, head_sha: SHA_A, shared_generation: 1 });
      const [job] = await h.rows("select kind, state, installation_id, repository_owner, repository_name, pull_number, head_sha, evaluation_generation, authority_epoch from jobs where kind = 'evaluation'");
      expect(job).toEqual({ kind: "evaluation", state: "pending", installation_id: INSTALLATION, repository_owner: "acme", repository_name: "web", pull_number: 7, head_sha: SHA_A, evaluation_generation: 1, authority_epoch: 0 });
      // The forge is unreachable in this harness, so the exact-head invalidation stays pending at the new S.
      const [invalidation] = await h.rows("select kind, state, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, shared_generation from jobs where kind = 'head_invalidation'");
      expect(invalidation).toEqual({ kind: "head_invalidation", state: "pending", priority: 0, installation_id: INSTALLATION, repository_id: WEB.id, repository_owner: "acme", repository_name: "web", head_sha: SHA_A, shared_generation: 1 });
    });

    test("a rerequest names only its head: S advances and the invalidation is queued, no pull request's evaluation", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("check_run", "r1", checkRunEvent({ appId: 12, name: "Service / approval" }))).body).toEqual({ accepted: true, queued: true });
      expect(await h.rows("select pull_number, head_sha, shared_generation from webhook_deliveries")).toEqual([{ pull_number: null, head_sha: SHA_A, shared_generation: 1 }]);
      expect(await h.rows("select kind, head_sha, shared_generation from jobs")).toEqual([{ kind: "head_invalidation", head_sha: SHA_A, shared_generation: 1 }]);
      expect(await h.count("pull_generations")).toBe(0);
    });

    test("a merge group's checks_requested is durable merge-group work on its head; destroyed cancels it; a redelivery changes nothing", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("merge_group", "g1", mergeGroupEvent("checks_requested"))).body).toEqual({ accepted: true, queued: true });
      expect(await h.rows("select kind, head_sha, base_ref, shared_generation from jobs")).toEqual([{ kind: "merge_group", head_sha: SHA_A, base_ref: "main", shared_generation: 1 }]);
      expect(await h.rows("select event, action, head_sha, shared_generation from webhook_deliveries")).toEqual([{ event: "merge_group", action: "checks_requested", head_sha: SHA_A, shared_generation: 1 }]);
      expect((await h.send("merge_group", "g1", mergeGroupEvent("checks_requested"))).body).toEqual({ accepted: false, queued: false });
      expect(await h.count("jobs", "merges = 0")).toBe(1);
      expect((await h.send("merge_group", "g2", mergeGroupEvent("destroyed", { reason: "dequeued" }))).body).toEqual({ accepted: true, queued: false });
      expect(await h.count("jobs")).toBe(0);
      expect(await h.rows("select state, destroyed_reason from merge_groups")).toEqual([{ state: "destroyed", destroyed_reason: "dequeued" }]);
      expect((await h.send("merge_group", "g3", { ...mergeGroupEvent("checks_requested"), merge_group: { head_sha: "nope" } })).status).toBe(400);
    });

    test("the same delivery sent 20 times concurrently is accepted once and changes work once", async () => {
      h = await ingressHarness(backend);
      const replies = await Promise.all(Array.from({ length: 20 }, () => h.send("pull_request_review", "same-delivery", reviewEvent("submitted"))));
      expect(replies.filter((r) => r.body.accepted === true)).toHaveLength(1);
      expect(replies.filter((r) => r.body.accepted === false)).toHaveLength(19);
      expect(await h.count("webhook_deliveries")).toBe(1);
      expect(await h.count("head_generations", "shared_generation = 1")).toBe(1);
      expect(await h.count("pull_generations", "evaluation_generation = 1")).toBe(1);
    });

    test("a new delivery for the same pull request merges into its live rows and advances the fences", async () => {
      h = await ingressHarness(backend);
      await h.send("pull_request", "d1", pullRequestEvent("opened"));
      await h.send("pull_request_review", "d2", reviewEvent("submitted"));
      expect(await h.count("jobs", "kind = 'evaluation'")).toBe(1);
      expect(await h.count("jobs", "kind = 'evaluation' and evaluation_generation = 2 and merges = 1")).toBe(1);
      expect(await h.count("jobs", "kind = 'head_invalidation' and shared_generation = 2 and merges = 1")).toBe(1);
      expect(await h.count("head_generations", "shared_generation = 2")).toBe(1);
      expect(await h.rows("select delivery_id, shared_generation from webhook_deliveries order by delivery_id")).toEqual([{ delivery_id: "d1", shared_generation: 1 }, { delivery_id: "d2", shared_generation: 2 }]);
    });

    test("unmapped deliveries are acknowledged but neither retained nor deduplicated", async () => {
      h = await ingressHarness(backend);
      for (let i = 0; i < 2; i++) expect((await h.send("ping", "ping-1", { zen: "hi" })).body).toEqual({ accepted: true, queued: false });
      expect((await h.send("pull_request", "p1", pullRequestEvent("opened", { repo: POLICY_REPO }))).body).toEqual({ accepted: true, queued: false });
      expect(await h.count("webhook_deliveries")).toBe(0);
      expect(await h.count("jobs")).toBe(0);
    });

    test("a database failure while accepting is 503 and leaves no partial rows", async () => {
      h = await ingressHarness(backend);
      // Make the last write of the acceptance transaction fail (the evaluation job insert).
      if (backend === "sqlite") {
        await h.rows("create trigger fail_evaluation before insert on jobs when new.kind = 'evaluation' begin select raise(abort, 'injected failure'); end");
      } else {
        await h.rows("create function fail_evaluation() returns trigger language plpgsql as $$ begin raise exception 'injected failure'; end $$");
        await h.rows("create trigger fail_evaluation before insert on jobs for each row when (new.kind = 'evaluation') execute function fail_evaluation()");
      }
      const reply = await h.send("pull_request", "d1", pullRequestEvent("opened"));
      expect(reply.status).toBe(503);
      expect(await failures("database")).toBe(1);
      expect(await h.count("webhook_deliveries")).toBe(0);
      expect(await h.count("head_generations")).toBe(0);
      expect(await h.count("pull_generations")).toBe(0);
      expect(await h.count("jobs")).toBe(0);
    });
  });

  describe("database unavailable", () => {
    test("a database that is gone answers 503 and acknowledges nothing", async () => {
      h = await ingressHarness(backend);
      const reachable = h.store;
      await reachable.close(); // the server side of the pool is gone
      expect((await h.send("pull_request", "d1", pullRequestEvent("opened"))).status).toBe(503);
      expect((await h.send("label", "l1", labelEvent("created"))).status).toBe(503);
      expect(await failures("database")).toBe(2);
      const drop = h.close;
      h = { ...h, close: async () => drop().catch(() => {}) } as Harness;
    });
  });

  describe("authority events", () => {
    test("an authority event advances the epoch and records installation-wide fan-out; its duplicate changes nothing", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("push", "a1", pushEvent({ repo: POLICY_REPO, ref: "refs/heads/main" }))).body).toEqual({ accepted: true, queued: true });
      expect((await h.send("push", "a1", pushEvent({ repo: POLICY_REPO, ref: "refs/heads/main" }))).body).toEqual({ accepted: false, queued: false });
      expect(await h.rows("select authority_epoch from installation_epochs")).toEqual([{ authority_epoch: 1 }]);
      expect(await h.count("jobs", "kind = 'installation_fanout' and authority_epoch = 1")).toBe(1);
    });

    test("a later evaluation row records the epoch current at enqueue", async () => {
      h = await ingressHarness(backend);
      await h.send("team", "a1", { action: "edited", team: { slug: "core" }, installation: { id: INSTALLATION } });
      await h.send("pull_request", "d1", pullRequestEvent("opened"));
      expect(await h.count("jobs", "kind = 'evaluation' and authority_epoch = 1")).toBe(1);
    });

    test("a label definition change is repository-scoped fan-out that removes older base-specific rows", async () => {
      h = await ingressHarness(backend);
      await h.send("push", "p1", pushEvent({ ref: "refs/heads/main" }));
      expect(await h.count("jobs", "kind = 'base_ref'")).toBe(1);
      await h.send("label", "l1", labelEvent("edited"));
      expect(await h.count("jobs", "kind = 'repository_fanout'")).toBe(1);
      expect(await h.count("jobs", "kind = 'base_ref'")).toBe(0);
    });

    test("an authority event waits for an in-flight check write and is recorded once it ends", async () => {
      h = await ingressHarness(backend, { timeoutMs: 3_000 });
      const release = await h.store.acquireSharedGuard(INSTALLATION, 1_000);
      const reply = h.send("organization", "o1", { action: "member_added", installation: { id: INSTALLATION } });
      await Bun.sleep(200);
      expect(await h.count("installation_epochs")).toBe(0);
      await release();
      expect((await reply).body).toEqual({ accepted: true, queued: true });
      expect(await h.count("installation_epochs", "authority_epoch = 1")).toBe(1);
    });

    test("an authority event that cannot order itself against a check write within the bound is 503 and not recorded", async () => {
      h = await ingressHarness(backend, { timeoutMs: 300 });
      const release = await h.store.acquireSharedGuard(INSTALLATION, 1_000);
      try {
        const reply = await h.send("membership", "m1", { action: "removed", installation: { id: INSTALLATION } });
        expect(reply.status).toBe(503);
        expect(await failures("authority_timeout")).toBe(1);
        expect(await h.count("webhook_deliveries")).toBe(0);
        expect(await h.count("jobs")).toBe(0);
      } finally {
        await release();
      }
      // Redelivered once the write finished, it is accepted.
      expect((await h.send("membership", "m1", { action: "removed", installation: { id: INSTALLATION } })).status).toBe(202);
    });

    test("a check write on another installation does not delay an authority event", async () => {
      h = await ingressHarness(backend, { timeoutMs: 300 });
      const release = await h.store.acquireSharedGuard(INSTALLATION + 1, 1_000);
      try {
        expect((await h.send("organization", "o1", { action: "renamed", installation: { id: INSTALLATION } })).status).toBe(202);
      } finally {
        await release();
      }
    });

    test("a well-formed removal of ordinary repositories is acknowledged without work", async () => {
      h = await ingressHarness(backend);
      expect((await h.send("installation_repositories", "r1", installationRepositoriesEvent("removed", [WEB]))).body).toEqual({ accepted: true, queued: false });
      expect(await h.count("jobs")).toBe(0);
      expect(await h.count("webhook_deliveries")).toBe(0);
    });

    test("a malformed removal is installation-wide fan-out", async () => {
      h = await ingressHarness(backend);
      await h.send("installation_repositories", "r1", { ...installationRepositoriesEvent("removed", []), repositories_removed: "oops" });
      expect(await h.count("jobs", "kind = 'installation_fanout'")).toBe(1);
    });
  });

  describe("base-ref work", () => {
    test("pushes queue one row per distinct base; the 101st distinct base collapses them into one repository-wide job", async () => {
      h = await ingressHarness(backend);
      for (let i = 0; i < 100; i++) await h.send("push", `p${i}`, pushEvent({ ref: `refs/heads/b${i}` }));
      expect(await h.count("jobs", "kind = 'base_ref'")).toBe(100);
      await h.send("push", "p-again", pushEvent({ ref: "refs/heads/b5" }));
      expect(await h.count("jobs", "kind = 'base_ref'")).toBe(100);
      await h.send("push", "p100", pushEvent({ ref: "refs/heads/b100" }));
      expect(await h.count("jobs", "kind = 'base_ref'")).toBe(0);
      expect(await h.count("jobs", "kind = 'repository_fanout'")).toBe(1);
      // Further pushes are covered by the pending repository-wide job.
      await h.send("push", "p101", pushEvent({ ref: "refs/heads/b101" }));
      expect(await h.count("jobs", "kind = 'base_ref'")).toBe(0);
    });
  });
});
