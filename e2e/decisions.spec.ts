import AxeBuilder from "@axe-core/playwright";
import { expect, type Page, test } from "@playwright/test";
import { guardPages } from "./support/page-guard.ts";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RecordedBreakGlass } from "../server/records/schema.ts";
import { decodeState } from "../web/src/codec.ts";

/**
 * The decisions page (issue 28 item 5) against the compiled binary: records seeded into its database through the writers'
 * operations (e2e/support/seed-decisions.ts), searched, read, an unapproved merge, and the hand-off to the playground. The
 * page may ask only its own origin, and the console must stay free of errors.
 */
const root = fileURLToPath(new URL("..", import.meta.url));
type Seeded = {
  approved: { id: string; head: string; base: string; title: string; conclusion: string };
  merged: { id: string; mergeCommit: string };
  failed: { id: string; head: string; title: string; conclusion: string };
  bypass: { id: string; mergeCommit: string };
  gadgets: { id: string };
  override: { id: string; head: string; breakGlass: RecordedBreakGlass; ownerSets: string[][] };
  overrideMerge: { id: string; mergeCommit: string };
  hostile: { id: string; reason: string; recorded: string };
  unconfirmed: { id: string };
  unconfirmedMerge: { id: string };
  notEnrolled: { id: string; mergeCommit: string; base: string };
  group: { id: string; head: string; decisions: string[] };
  queueMerge: { id: string };
  blobs: { codeowners: string; repositoryPolicy: string; organizationPolicy: string };
  organizationPolicyCommit: string;
};
let seeded: Seeded;

test.beforeAll(() => {
  const localBun = join(root, ".tools/node_modules/.bin/bun");
  const database = `sqlite:${join(process.env.E2E_SERVICE_DATA!, "service.db")}`;
  seeded = JSON.parse(execFileSync(existsSync(localBun) ? localBun : "bun", ["e2e/support/seed-decisions.ts", database], { cwd: root, encoding: "utf8", timeout: 60_000 })) as Seeded;
});

// The page and its API answer only with a credential: this browser presents the service's reader token on every request
// (signing in with the forge is e2e/sign-in.spec.ts).
test.use({ extraHTTPHeaders: { authorization: `Bearer ${process.env.E2E_DECISIONS_TOKEN}` } });

// A refused search answers 400 by design; the browser logs the failed fetch.
guardPages(test, { allowedConsoleError: /status of 400/ });

const rows = (page: Page) => page.getByTestId("results").locator("tbody tr");
const recordLinks = async (page: Page) => (await rows(page).locator("th a").allTextContents()).map((text) => text.split(" ").at(-1));

async function noViolations(page: Page, what: string) {
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), what).toEqual([]);
}

test("search lists every record newest first, and narrows by repository, pull request and commit", async ({ page }, testInfo) => {
  await page.goto("/decisions/");
  await expect(rows(page)).toHaveCount(15);
  // A token holder is nobody signed in: the page offers no sign-out.
  await expect(page.getByTestId("session")).toHaveCount(0);
  expect(await recordLinks(page)).toEqual([
    seeded.notEnrolled.id, seeded.unconfirmedMerge.id, seeded.unconfirmed.id, seeded.hostile.id, seeded.overrideMerge.id, seeded.override.id, seeded.gadgets.id, seeded.bypass.id, seeded.failed.id, seeded.merged.id, seeded.approved.id,
    seeded.queueMerge.id, seeded.group.id, ...[...seeded.group.decisions].reverse(),
  ]);
  await noViolations(page, "search page");
  await page.screenshot({ path: testInfo.outputPath("search.png"), fullPage: true });

  await page.getByLabel("Repository").fill("ACME/Widgets");
  await page.getByLabel("Pull request").fill("43");
  await page.getByRole("button", { name: "Search" }).click();
  await expect(page).toHaveURL(/\?repository=ACME%2FWidgets&pull=43/);
  await expect(rows(page)).toHaveCount(2);
  expect(await recordLinks(page)).toEqual([seeded.bypass.id, seeded.failed.id]);

  await page.goto("/decisions/");
  await page.getByLabel("Commit").fill(seeded.merged.mergeCommit);
  await page.getByRole("button", { name: "Search" }).click();
  await expect(rows(page)).toHaveCount(1);
  expect(await recordLinks(page)).toEqual([seeded.merged.id]);

  await page.goto(`/decisions/?commit=${seeded.approved.head}`);
  await expect(rows(page)).toHaveCount(2);
  expect(await recordLinks(page)).toEqual([seeded.merged.id, seeded.approved.id]);

  await page.goto("/decisions/?repository=acme/widgets&pull=abc");
  await expect(page.getByRole("alert")).toHaveText(/pull: must be a pull request number/);
});

test("a record shows its owner sets, the reviews that satisfied them and its files on the forge at the commit read", async ({ page }, testInfo) => {
  await page.goto("/decisions/");
  await page.getByRole("link", { name: `Decision ${seeded.approved.id}` }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Decision ${seeded.approved.id}: ${seeded.approved.conclusion}`);
  await expect(page.getByText(seeded.approved.title)).toBeVisible();
  await expect(page.getByTestId("unconfirmed")).toHaveCount(0);
  await expect(page.getByTestId("forge-directory")).toHaveText(".forge");
  const set = page.getByTestId("owner-set");
  await expect(set).toHaveCount(1);
  await expect(set.getByRole("heading", { level: 3 })).toHaveText("Owner set 1: satisfied, 1 of 1 approval");
  await expect(set.getByRole("listitem").filter({ hasText: "alice" })).toContainText(`as an owner @alice: review`);
  await expect(set.getByRole("listitem").filter({ hasText: "alice" })).toContainText(seeded.approved.head.slice(0, 12));
  const base = seeded.approved.base;
  const files = page.getByRole("region", { name: "Files read" });
  await expect(files.getByRole("link", { name: "CODEOWNERS", exact: true })).toHaveAttribute("href", `https://github.com/acme/widgets/blob/${base}/CODEOWNERS`);
  const policies = files.getByRole("link", { name: ".forge/service-policy.toml" });
  await expect(policies).toHaveCount(2);
  await expect(policies.nth(0)).toHaveAttribute("href", `https://github.com/acme/widgets/blob/${base}/.forge/service-policy.toml`);
  await expect(policies.nth(1)).toHaveAttribute("href", `https://github.com/acme/.forge/blob/${seeded.organizationPolicyCommit}/.forge/service-policy.toml`);
  for (const blob of Object.values(seeded.blobs)) await expect(files.getByText(blob, { exact: true })).toBeVisible();
  await noViolations(page, "decision record");
  await page.screenshot({ path: testInfo.outputPath("decision-record.png"), fullPage: true });
});

test("a merge in a repository that does not enable the service is not enrolled: neither highlighted nor listed as unapproved", async ({ page }) => {
  await page.goto("/decisions/?repository=acme/legacy");
  await expect(rows(page)).toHaveCount(1);
  const row = rows(page).first();
  await expect(row).not.toHaveClass(/unapproved/);
  await expect(row).toContainText("Merged where the service was not enabled (not enrolled)");
  await row.locator("th a").click();
  await expect(page.getByTestId("not-enrolled")).toContainText(`Not enrolled. The repository policy at the base commit ${seeded.notEnrolled.base} does not enable the service`);
  await expect(page.getByTestId("unapproved")).toHaveCount(0);
  await noViolations(page, "not enrolled merge");
  await page.goto("/decisions/?unapproved=true");
  await expect(rows(page)).toHaveCount(2);
  expect(await recordLinks(page)).not.toContain(seeded.notEnrolled.id);
});

test("an unapproved merge is highlighted, names the decision current at merge, and that unconfirmed decision is marked", async ({ page }) => {
  await page.goto("/decisions/?unapproved=true");
  await expect(rows(page)).toHaveCount(2);
  expect(await recordLinks(page)).toEqual([seeded.unconfirmedMerge.id, seeded.bypass.id]);
  const row = rows(page).nth(1);
  await expect(row).toHaveClass(/unapproved/);
  await expect(row).toContainText("Unapproved merge");
  await expect(page.getByLabel("Unapproved merges only")).toBeChecked();
  await row.getByRole("link").click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Merge ${seeded.bypass.id} of #43`);
  await expect(page.getByTestId("unapproved")).toContainText(`Unapproved merge. The head at merge had no confirmed success from the service (its current decision, ${seeded.failed.id}, was failure)`);
  await expect(page.getByTestId("merge-override")).toHaveCount(0);
  await expect(page.getByText(seeded.bypass.mergeCommit)).toBeVisible();
  await noViolations(page, "unapproved merge");
  await page.getByRole("link", { name: seeded.failed.id, exact: true }).click();
  await expect(page.getByTestId("unconfirmed")).toContainText("the result may not have reached the forge");
  await expect(page.getByText(seeded.failed.title)).toBeVisible();
  await noViolations(page, "unconfirmed decision");
});

test("open in playground hands the record's inputs to the playground, each file a placeholder naming its blob", async ({ page }) => {
  await page.goto(`/decisions/?id=${seeded.approved.id}`);
  const missing = page.getByTestId("missing-files").getByRole("listitem");
  await expect(missing).toHaveCount(3);
  await expect(missing.nth(0)).toContainText(`code-owners file CODEOWNERS (blob ${seeded.blobs.codeowners})`);
  await page.getByRole("link", { name: `Open ${seeded.approved.id} in the playground` }).click();
  await expect(page).toHaveURL(/\/playground\/#v1\./);
  await expect(page.getByTestId("conclusion")).toBeVisible();
  const decoded = await decodeState(new URL(page.url()).hash);
  if (!decoded.ok) throw new Error(decoded.error);
  const evidence = decoded.state.evidence;
  expect(evidence.repository).toMatchObject({ owner: "acme", name: "widgets" });
  expect(evidence.pullRequest).toMatchObject({ number: 42, headSha: seeded.approved.head, baseSha: seeded.approved.base });
  expect(evidence.reviews.complete && evidence.reviews.items.map((r) => [r.user?.login, r.state, r.commitId])).toEqual([["alice", "APPROVED", seeded.approved.head]]);
  const codeowners = evidence.codeowners.CODEOWNERS;
  expect(codeowners?.kind === "found" && codeowners.text).toContain(`blob ${seeded.blobs.codeowners}`);
  await expect(page.getByRole("textbox", { name: "CODEOWNERS", exact: true })).toHaveValue(new RegExp(`Decision record ${seeded.approved.id} keeps this file by its blob SHA`));
  await expect(page.getByLabel("Pull request number")).toHaveValue("42");
});

test("the overrides filter, used from the keyboard, asks the route for overrides only and lists only the override records, each marked", async ({ page }, testInfo) => {
  await page.goto("/decisions/");
  await expect(rows(page)).toHaveCount(15);
  const filter = page.getByLabel("Break-glass overrides only");
  await expect(filter).not.toBeChecked();
  await filter.focus();
  await page.keyboard.press("Space");
  await expect(filter).toBeChecked();
  await page.keyboard.press("Tab");
  await expect(page.getByRole("button", { name: "Search" })).toBeFocused();
  const asked = page.waitForRequest((request) => new URL(request.url()).pathname === "/api/decisions");
  await page.keyboard.press("Enter");
  expect(new URL((await asked).url()).searchParams.get("overrides")).toBe("true");
  await expect(page).toHaveURL(/[?&]overrides=true(&|$)/);
  await expect(rows(page)).toHaveCount(5);
  expect(await recordLinks(page)).toEqual([seeded.unconfirmedMerge.id, seeded.unconfirmed.id, seeded.hostile.id, seeded.overrideMerge.id, seeded.override.id]);
  for (const row of await rows(page).all()) await expect(row).toContainText("break-glass override");
  // The unapproved merge of an unconfirmed override stays marked unapproved first.
  await expect(rows(page).nth(0)).toHaveClass(/unapproved/);
  await expect(rows(page).nth(0)).toContainText("Unapproved merge");
  for (const n of [1, 2, 3, 4]) await expect(rows(page).nth(n)).toHaveClass(/override/);
  await expect(rows(page).nth(3)).toContainText(`Merged on a break-glass override, approved by ${seeded.override.id}`);
  await expect(page.getByLabel("Break-glass overrides only")).toBeChecked();
  await expect(page.getByLabel("Unapproved merges only")).not.toBeChecked();
  await noViolations(page, "override search");
  await page.screenshot({ path: testInfo.outputPath("overrides.png"), fullPage: true });

  // Unfiltered, an ordinary success carries no override mark.
  await page.goto(`/decisions/?commit=${seeded.approved.head}`);
  await expect(rows(page)).toHaveCount(2);
  await expect(page.getByTestId("results")).not.toContainText("break-glass");
});

test("an override's decision names the reviewer, team, review, reason and the owner sets its owners did not satisfy", async ({ page }, testInfo) => {
  const expected = seeded.override.breakGlass;
  expect(expected.unsatisfied_owner_sets.length).toBeGreaterThan(0);
  await page.goto(`/decisions/?id=${seeded.override.id}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Decision ${seeded.override.id}: success`);
  await expect(page.getByText("Approved by break-glass override", { exact: true })).toBeVisible();
  const override = page.getByRole("region", { name: "Break-glass override" });
  await expect(override).toContainText(`Reviewer${expected.reviewer_login} (user ${expected.reviewer_id})`);
  await expect(override).toContainText(`Team${expected.team}`);
  await expect(override).toContainText(`Review${expected.review_id}`);
  await expect(override.getByTestId("override-reason")).toHaveText(expected.reason);
  const unsatisfied = override.getByTestId("unsatisfied-sets").getByRole("listitem");
  await expect(unsatisfied).toHaveCount(expected.unsatisfied_owner_sets.length);
  for (const [n, index] of expected.unsatisfied_owner_sets.entries()) {
    await expect(unsatisfied.nth(n)).toHaveText(`Owner set ${index + 1}: ${seeded.override.ownerSets[index]!.join("")}`);
  }
  // Each names its owner set on the page, which shows the override as the approval that counted.
  await unsatisfied.first().getByRole("link").click();
  const first = expected.unsatisfied_owner_sets[0]!;
  await expect(page).toHaveURL(new RegExp(`#owner-set-${first + 1}$`));
  await expect(page.locator(`#owner-set-${first + 1}`)).toContainText(`${expected.reviewer_login} (user ${expected.reviewer_id}) by break-glass override, team ${expected.team}`);
  await noViolations(page, "override decision");
  await page.screenshot({ path: testInfo.outputPath("override-decision.png"), fullPage: true });
});

test("a hostile reason renders as inert text, held to the record's bound and a bounded box", async ({ page }, testInfo) => {
  await page.goto(`/decisions/?id=${seeded.hostile.id}`);
  const reason = page.getByTestId("override-reason");
  // The record keeps the first 500 characters of the reason; the page shows those as text, the markup unparsed.
  expect([...seeded.hostile.recorded].length).toBe(500);
  expect(seeded.hostile.reason.startsWith(seeded.hostile.recorded)).toBe(true);
  await expect(reason).toHaveText(seeded.hostile.recorded);
  await expect(reason).toContainText('<img src=x onerror="window.__pwned=1"><script>');
  const override = page.getByRole("region", { name: "Break-glass override" });
  await expect(override.locator("img, script, b")).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  // Bounded: within the viewport's width, at most 12 lines high, scrolled inside its box, and reachable by keyboard to scroll.
  const viewport = page.viewportSize()!;
  const box = (await reason.boundingBox())!;
  expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
  expect(box.height).toBeLessThanOrEqual(16 * 15 + 20);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
  await reason.focus();
  await expect(reason).toBeFocused();
  await noViolations(page, "hostile reason");
  await page.screenshot({ path: testInfo.outputPath("hostile-reason.png"), fullPage: true });
});

test("the merge of an overridden head says it merged on the override and links the override's decision", async ({ page }, testInfo) => {
  await page.goto(`/decisions/?commit=${seeded.overrideMerge.mergeCommit}`);
  await expect(rows(page)).toHaveCount(1);
  await expect(rows(page).first()).toContainText(`Merged on a break-glass override, approved by ${seeded.override.id}`);
  await rows(page).first().getByRole("link").click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Merge ${seeded.overrideMerge.id} of #44`);
  await expect(page.getByTestId("unapproved")).toHaveCount(0);
  const notice = page.getByTestId("merge-override");
  await expect(notice).toContainText(`Merged on a break-glass override. The head at merge was approved by an emergency override, not by its owners: decision ${seeded.override.id} names the reviewer, team and reason.`);
  await noViolations(page, "merge on an override");
  await page.screenshot({ path: testInfo.outputPath("override-merge.png"), fullPage: true });
  await notice.getByRole("link", { name: seeded.override.id, exact: true }).click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Decision ${seeded.override.id}: success`);
  await expect(page.getByRole("region", { name: "Break-glass override" })).toContainText(seeded.override.breakGlass.reviewer_login);
});

test("an unapproved merge whose decision carried an override that was never confirmed says the override did not approve it", async ({ page }) => {
  await page.goto(`/decisions/?id=${seeded.unconfirmedMerge.id}`);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Merge ${seeded.unconfirmedMerge.id} of #3`);
  await expect(page.getByTestId("unapproved")).toContainText(`(its current decision, ${seeded.unconfirmed.id}, was a success never confirmed)`);
  const notice = page.getByTestId("merge-override");
  await expect(notice).toContainText(`Break-glass override not confirmed. The decision current at merge (${seeded.unconfirmed.id}) carried a break-glass override, but it was not a confirmed success, so the override did not approve this merge.`);
  await expect(page.getByText("Merged on a break-glass override")).toHaveCount(0);
  await noViolations(page, "unapproved merge of an unconfirmed override");
  await notice.getByRole("link", { name: seeded.unconfirmed.id, exact: true }).click();
  await expect(page.getByTestId("unconfirmed")).toBeVisible();
  await expect(page.getByRole("region", { name: "Break-glass override" })).toBeVisible();
});

test("a merge group's record lists its pull requests and why each passed, and a merge through the queue links to it", async ({ page }) => {
  await page.goto(`/decisions/?commit=${seeded.group.head}`);
  await expect(rows(page)).toHaveCount(2);
  expect(await recordLinks(page)).toEqual([seeded.queueMerge.id, seeded.group.id]);
  const groupRow = rows(page).filter({ hasText: `Merge group ${seeded.group.id}` });
  await expect(groupRow.locator("td").nth(1)).toHaveText("#45, #46");
  await page.getByRole("link", { name: `Merge ${seeded.queueMerge.id}` }).click();
  await expect(page.getByTestId("merge-group-link")).toHaveText(`verified in merge group ${seeded.group.id}`);
  await page.getByTestId("merge-group-link").getByRole("link").click();
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(`Merge group ${seeded.group.id} into main`);
  await expect(page.getByTestId("group-verdict")).toHaveText("Verified: Merge group verified: 2 pull requests");
  const members = page.getByTestId("group-members").locator("tbody tr");
  await expect(members).toHaveCount(2);
  await expect(members.nth(0)).toContainText("passed: approved under the rules it merges onto");
  await expect(members.nth(1)).toContainText("passed: re-evaluated under the rules it merges onto");
  await expect(members.nth(1).getByRole("link", { name: seeded.group.decisions[1]! })).toHaveAttribute("href", `?id=${seeded.group.decisions[1]}`);
  await noViolations(page, "merge group record");
});
