import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { addOpenPullRequests, addReviews, createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import type { Fault } from "../simulator/faults.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import type { Listed } from "../evaluation/evidence.ts";
import type { ForgeClient } from "./client.ts";
import { listAll } from "./pagination.ts";
import { clientFor, fixturePlan } from "./test-support.ts";
import type { CallOptions, ForgeResponse } from "./transport.ts";

// Every list the service reads is complete or a gap with a named reason that makes the job retry (issue 16 item 1, DESIGN
// 3.8): each list below spans three pages of 100 (the last one short), and each page fault of the simulator breaks one of
// the promises its Link header made.

let sim: ForgeSimulator;
let s: Scenario;
const keys = generateAppKeys();
/** The repository whose open pull requests change between two readings (conditional requests). */
const LISTS = "lists";
/** The repository whose 250 open pull requests share one head, SHARED. */
const HEADS = "heads";
const SHARED = "a".repeat(40);

beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys, extraFiles: 230 }); // 232 changed files
  const c = sim.control;
  addReviews(sim, { owner: s.org, repo: s.repo, number: s.pullNumber, count: 250 });
  addOpenPullRequests(sim, { owner: s.org, repo: s.repo, count: 249 }); // with the scenario's own: 250
  for (let i = 0; i < 249; i++) c.createInstallation({ appId: s.appId, account: c.createOrganization({ login: `org-${i}` }).login }); // 250
  c.createRepository({ owner: s.org, name: LISTS });
  for (let i = 0; i < 246; i++) c.createRepository({ owner: s.org, name: `repo-${i}` }); // with web, .forge, lists and heads: 250
  const lists = c.mustRepo(s.org, LISTS);
  lists.nextNumber = 1000;
  addOpenPullRequests(sim, { owner: s.org, repo: LISTS, count: 150 });
  c.createRepository({ owner: s.org, name: HEADS });
  for (const number of addOpenPullRequests(sim, { owner: s.org, repo: HEADS, count: 250 })) c.mustRepo(s.org, HEADS).pulls.get(number)!.headSha = SHARED;
}, 30_000);
afterEach(() => { sim.faults.clear(); });
afterAll(async () => { await sim.stop(); });

const evidence = async (client: ForgeClient) => {
  const r = await client.gatherEvidence(
    { installationId: s.installationId, owner: s.org, repo: s.repo, number: s.pullNumber, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" },
    { planLookups: fixturePlan },
  );
  if (r.kind !== "gathered") throw new Error(`expected evidence, got ${r.kind}`);
  return r.evidence;
};

interface ListCase {
  name: string;
  /** The route's pathname, for faults. */
  path: string;
  size: number;
  read: (client: ForgeClient) => Promise<Listed<unknown>>;
  /** The list has a count elsewhere it must agree with (changed_files, total_count). */
  counted?: boolean;
}

/**
 * The reconciler's streamed listing, gathered as a list: what a new pass tells replaces what the pages before it told. Its
 * pages are at most one page of the forge's each, and carry only the fields the reconciler reads (RECONCILER_PULLS).
 */
async function streamed(client: ForgeClient, repo: string): Promise<Listed<unknown>> {
  let items: unknown[] = [];
  let pass = 0;
  const outcome = await client.streamOpenPullRequestItems(s.installationId, s.org, repo, 10_000, (page, at) => {
    if (at.pass !== pass) {
      pass = at.pass;
      items = [];
    }
    expect(page.length).toBeLessThanOrEqual(100);
    for (const item of page) expect(Object.keys(item as object).sort()).toEqual(["base", "head", "number", "state", "updated_at"]);
    items.push(...page);
  });
  return outcome.complete ? { complete: true, items } : outcome;
}

const LISTS_READ: ListCase[] = [
  { name: "changed files", path: "/repos/acme/web/pulls/1/files", size: 232, counted: true, read: async (c) => (await evidence(c)).files },
  { name: "reviews", path: "/repos/acme/web/pulls/1/reviews", size: 250, read: async (c) => (await evidence(c)).reviews },
  { name: "pull requests of a head (shared-head evidence, exact-head invalidation)", path: `/repos/acme/${HEADS}/commits/${SHARED}/pulls`, size: 250, read: (c) => c.listOpenPullRequestsOnHead(s.installationId, s.org, HEADS, SHARED) },
  { name: "open pull requests (fan-out)", path: "/repos/acme/web/pulls", size: 250, read: (c) => c.listOpenPullRequests(s.installationId, s.org, s.repo) },
  { name: "open pull requests (reconciler, streamed)", path: "/repos/acme/web/pulls", size: 250, read: (c) => streamed(c, s.repo) },
  { name: "installations", path: "/app/installations", size: 250, read: (c) => c.listInstallations() },
  { name: "installation repositories", path: "/installation/repositories", size: 250, counted: true, read: (c) => c.listInstallationRepositories(s.installationId) },
];

/** Page faults and the named reason each must produce. */
const BROKEN_PAGES: { what: string; fault: Omit<Fault, "path">; reason: RegExp }[] = [
  { what: "an empty page that the previous page linked to", fault: { kind: "missing_page", page: 2 }, reason: /page 2 is empty although page 1 linked to it/ },
  { what: "an empty last page that the previous page linked to", fault: { kind: "missing_page", page: 3 }, reason: /page 3 is empty although page 2 linked to it/ },
  { what: "a short page that is not the last", fault: { kind: "short_page", page: 2 }, reason: /page 2 has 99 items but links to a next page/ },
  { what: "a list that ends before the last page page 1 announced", fault: { kind: "end_early", page: 2 }, reason: /the list ends at page 2, before the last page 3 that page 1 announced/ },
  { what: "a page announcing another last page than page 1", fault: { kind: "wrong_last", page: 2 }, reason: /page 2 announces 4 pages where page 1 announced 3/ },
  { what: "an item listed twice", fault: { kind: "repeat_item", page: 2 }, reason: /page 2 repeats an item already listed/ },
  { what: "a last page linking to one more", fault: { kind: "extra_page" }, reason: /page 3 has [0-9]+ items but links to a next page/ },
];

describe.each(LISTS_READ)("$name", (list) => {
  test("are read whole across pages", async () => {
    const listed = await list.read(clientFor(sim, s));
    if (!listed.complete) throw new Error(listed.detail);
    expect(listed.items).toHaveLength(list.size);
  });

  test("are read whole when the forge cannot say which page is the last", async () => {
    sim.injectFault({ kind: "omit_last", path: list.path });
    const listed = await list.read(clientFor(sim, s));
    if (!listed.complete) throw new Error(listed.detail);
    expect(listed.items).toHaveLength(list.size);
  });

  for (const broken of BROKEN_PAGES) {
    test(`are incomplete, to be retried, with ${broken.what}`, async () => {
      sim.injectFault({ ...broken.fault, path: list.path });
      expect(await list.read(clientFor(sim, s))).toEqual({ complete: false, cause: "transient", detail: expect.stringMatching(broken.reason) });
    });
  }

  if (list.counted) {
    test("are incomplete, to be retried, when the listed total disagrees with the count the forge gives", async () => {
      sim.injectFault({ kind: "short_page", page: 3, path: list.path });
      expect(await list.read(clientFor(sim, s))).toEqual({
        complete: false, cause: "transient", detail: expect.stringMatching(`listed ${list.size - 1} items; the forge reported ${list.size}`),
      });
    });
  }
});

describe("lists read again with conditional requests", () => {
  const readLists = (client: ForgeClient) => streamed(client, LISTS);
  const pages = () => sim.requests.filter((r) => r.path === `/repos/acme/${LISTS}/pulls`);

  test("the reconciler's pages are kept in their few fields apart from the whole pages other readers of the same list keep", async () => {
    const client = clientFor(sim, s);
    const repo = sim.control.mustRepo(s.org, LISTS);
    const draft = [...repo.pulls.values()].find((p) => p.state === "open")!;
    draft.draft = true;
    try {
      expect(await readLists(client)).toMatchObject({ complete: true, items: { length: 150 } });
      // Read by the fan-out's reader right after: whole pages (a draft is still a draft), never the reconciler's kept form.
      const whole = await client.listOpenPullRequests(s.installationId, s.org, LISTS);
      if (!whole.complete) throw new Error(whole.detail);
      expect(whole.items.find((p) => p.number === draft.number)?.draft).toBe(true);
      sim.requests.length = 0;
      expect(await readLists(client)).toMatchObject({ complete: true, items: { length: 150 } });
      expect(pages().map((r) => r.status)).toEqual([304, 304]);
    } finally {
      draft.draft = false;
    }
  });

  test("a list that changed behind an unchanged first page (answered 304) is read whole: with the links the 304 carries, or afresh when it carries none", async () => {
    const client = clientFor(sim, s);
    const repo = sim.control.mustRepo(s.org, LISTS);
    expect(await readLists(client)).toMatchObject({ complete: true, items: { length: 150 } });
    // Lower numbers sort last (newest first), so page 1 stays the same body while the list gains a third page.
    repo.nextNumber = 900;
    const added = addOpenPullRequests(sim, { owner: s.org, repo: LISTS, count: 100 });
    try {
      sim.requests.length = 0;
      expect(await readLists(client)).toMatchObject({ complete: true, items: { length: 250 } });
      expect(pages().map((r) => r.status)).toEqual([304, 200, 200]);
    } finally {
      for (const n of added) repo.pulls.delete(n);
    }
    sim.requests.length = 0;
    // And shrank back: page 1 is still the same body, but now the last page is page 2.
    expect(await readLists(client)).toMatchObject({ complete: true, items: { length: 150 } });
    expect(pages().map((r) => r.status)).toEqual([304, 200]);
    // And to one page: its 304 carries no Link at all, so the kept one (next: page 2) is stale; the list is read again afresh.
    const closed = [...repo.pulls.values()].filter((p) => p.number < 1050);
    for (const p of closed) p.state = "closed";
    try {
      sim.requests.length = 0;
      expect(await readLists(client)).toMatchObject({ complete: true, items: { length: 100 } });
      expect(pages().map((r) => [r.query.match(/[?&]page=(\d+)/)![1], r.status])).toEqual([["1", 304], ["2", 200], ["1", 200], ["2", 200]]);
    } finally {
      for (const p of closed) p.state = "open";
    }
  });
});

/** A forge serving `pages` (item counts and Link headers as given), for promises the simulator has no fault for. */
function fakeForge(pages: { items: number; link?: string; count?: number }[]) {
  const calls: number[] = [];
  let id = 0;
  const fetchPage = async (params: Record<string, unknown>): Promise<ForgeResponse> => {
    const page = pages[Number(params.page) - 1] ?? { items: 0 };
    calls.push(Number(params.page));
    const items = Array.from({ length: page.items }, () => ({ id: ++id }));
    return { data: page.count === undefined ? items : { total_count: page.count, items }, headers: page.link ? { link: page.link } : {}, status: 200 };
  };
  return { calls, fetchPage };
}
const links = (next: number | null, last: number | null) => [next === null ? null : `<https://forge.test/things?per_page=100&page=${next}>; rel="next"`, last === null ? null : `<https://forge.test/things?per_page=100&page=${last}>; rel="last"`].filter(Boolean).join(", ");
const spec = { route: "GET /things", params: {}, maxItems: 1000, key: (x: unknown) => (x as { id: number }).id };

describe("listAll against promises no simulator fault breaks", () => {
  test("a next link to another page than the following one", async () => {
    const { fetchPage } = fakeForge([{ items: 100, link: links(3, 3) }, { items: 100 }, { items: 50 }]);
    expect(await listAll(fetchPage, spec)).toEqual({ complete: false, cause: "transient", detail: "GET /things: page 1 links to page 3 as the next one" });
  });

  test("a next link from the page page 1 announced as the last", async () => {
    const { fetchPage } = fakeForge([{ items: 100, link: links(2, 2) }, { items: 100, link: links(3, 2) }, { items: 50 }]);
    expect(await listAll(fetchPage, spec)).toEqual({ complete: false, cause: "transient", detail: "GET /things: page 2 links to a next page beyond the last page 2 that page 1 announced" });
  });

  test("items past the page page 1 announced as the last, found by looking one page further", async () => {
    const { fetchPage, calls } = fakeForge([{ items: 100, link: links(2, 2) }, { items: 100 }, { items: 50 }]);
    expect(await listAll(fetchPage, spec)).toEqual({ complete: false, cause: "transient", detail: "GET /things: page 3 has items beyond the last page 2 that page 1 announced" });
    expect(calls).toEqual([1, 2, 3]);
  });

  test("a full last page is confirmed by one empty page further", async () => {
    const { fetchPage, calls } = fakeForge([{ items: 100, link: links(2, 2) }, { items: 100 }]);
    expect(await listAll(fetchPage, spec)).toMatchObject({ complete: true, items: { length: 200 } });
    expect(calls).toEqual([1, 2, 3]);
  });

  test("a count beside the items that changes from page to page", async () => {
    const { fetchPage } = fakeForge([{ items: 100, link: links(2, 2), count: 150 }, { items: 50, count: 151 }]);
    expect(await listAll(fetchPage, { ...spec, itemsKey: "items", countKey: "total_count" })).toEqual({
      complete: false, cause: "transient", detail: "GET /things: page 2 reports 151 items in all where page 1 reported 150",
    });
  });
});

describe("listAll with a forge whose 304 answers keep stale links", () => {
  /** 150 things now; the kept answer for page 1 still announces a third page (the list had 250 when it was kept). */
  const forge = () => {
    const calls: { page: number; conditional: boolean }[] = [];
    const fetchPage = async (params: Record<string, unknown>, call?: CallOptions): Promise<ForgeResponse> => {
      const page = Number(params.page);
      const conditional = call?.conditional !== false;
      calls.push({ page, conditional });
      const data = Array.from({ length: page === 1 ? 100 : page === 2 ? 50 : 0 }, (_, i) => ({ id: (page - 1) * 100 + i }));
      if (page === 1) return conditional ? { data, headers: { link: links(2, 3) }, status: 200, revalidated: true } : { data, headers: { link: links(2, 2) }, status: 200 };
      return { data, headers: {}, status: 200 };
    };
    return { calls, fetchPage };
  };

  test("a break found after a revalidated page is read once more without conditional requests", async () => {
    const { calls, fetchPage } = forge();
    expect(await listAll(fetchPage, spec)).toMatchObject({ complete: true, items: { length: 150 } });
    expect(calls).toEqual([{ page: 1, conditional: true }, { page: 2, conditional: true }, { page: 1, conditional: false }, { page: 2, conditional: false }]);
  });

  test("a break that stays without conditional requests is the gap", async () => {
    const { calls, fetchPage } = forge();
    const listed = await listAll(async (params, call) => {
      const r = await fetchPage(params, call);
      return Number(params.page) === 2 ? { ...r, data: [] } : r;
    }, spec);
    expect(listed).toEqual({ complete: false, cause: "transient", detail: "GET /things: page 2 is empty although page 1 linked to it" });
    expect(calls).toHaveLength(4);
  });
});
