import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { guardPages } from "./support/page-guard.ts";

/**
 * The playground explains a break-glass override and each reason a request is refused (issue 29 item 5, DESIGN 3.11),
 * against the compiled binary, with no request leaving the service's origin and no console error.
 */
guardPages(test);

const conclusion = (page: Page) => page.getByTestId("conclusion");
const title = (page: Page) => page.getByTestId("check-title");
const section = (page: Page) => page.getByTestId("break-glass");
const refusal = (page: Page, code: string) => section(page).locator(`li[data-code="${code}"]`);

async function open(page: Page, scenarioId: string) {
  await page.goto("/playground/");
  await expect(conclusion(page)).toBeVisible();
  await page.getByLabel("Scenario").selectOption(scenarioId);
}

test("an override is explained: who overrode, as a member of which team, the reason, and what it does not lift", async ({ page }) => {
  await open(page, "break-glass");
  await expect(conclusion(page)).toHaveText("success");
  await expect(title(page)).toHaveText("Approved by break-glass override");
  const override = page.getByTestId("break-glass-override");
  await expect(override).toContainText("sam, an active member of the listed team sre, overrode the approval requirements");
  await expect(override).toContainText("Owner sets not satisfied by their owners: 1.");
  await expect(override.getByLabel("Reason given")).toHaveText("checkout is down; reverting the bad flag (INC-1234)");
  await expect(override).toContainText("Incomplete evidence, a shared head or a repository that has not opted in still keep the check from succeeding");
  await expect(page.getByTestId("review-effects")).toContainText("overrides the approval requirements (break-glass, member of sre)");
  // The check run as the forge would show it: the reviewer and the quoted reason.
  await expect(page.locator(".check")).toContainText("Reviewer: sam (member of sre");
  await expect(page.locator(".check blockquote")).toContainText("checkout is down; reverting the bad flag (INC-1234)");

  // A shared head still never succeeds.
  await page.getByLabel("Other open pull requests on this head").fill("43");
  await expect(conclusion(page)).toHaveText("in progress");
  await expect(override).toContainText("which is why this one does not succeed");
  await page.getByLabel("Other open pull requests on this head").fill("");
  await expect(conclusion(page)).toHaveText("success");
});

test("each refusal reason is explained beside the request it refused", async ({ page }) => {
  await open(page, "break-glass-refused");
  await expect(conclusion(page)).toHaveText("failure");
  await expect(title(page)).toHaveText("1 of 1 owner set not yet approved");
  const explained: Record<string, [string, string]> = {
    stale_commit: ["sam", "after a push, override the new head again"],
    short_reason: ["erin", "the reason has 9 visible characters; the organization requires at least 20"], // "urgent fix": the space does not count
    author: ["pat", "The pull request's author can never override"],
    not_a_member: ["olga", "Only an active member of a team the organization's [break_glass] lists may override"],
    wrong_state: ["bob", "Only an approving review overrides"],
  };
  for (const [code, [reviewer, text]] of Object.entries(explained)) {
    await expect(refusal(page, code), code).toContainText(reviewer);
    await expect(refusal(page, code), code).toContainText(text);
  }
  await expect(page.getByTestId("review-effects")).toContainText("break-glass request refused (stale_commit)");

  // Fixing one request in the page makes it override: olga joins the on-call team.
  await page.getByLabel("Members of acme/sre").fill("sam, pat, olga");
  await expect(title(page)).toHaveText("Approved by break-glass override");
  await page.getByLabel("Members of acme/sre").fill("sam, pat, olga:pending");
  await expect(conclusion(page)).toHaveText("failure");
});

test("a membership that cannot be looked up fails closed, a later review replaces an override, and without [break_glass] there is none", async ({ page }) => {
  await open(page, "break-glass");
  await page.getByLabel("Members of acme/sre").fill("sam:incomplete");
  await expect(conclusion(page)).toHaveText("retry");
  await expect(refusal(page, "membership_incomplete")).toContainText("the team membership of sam could not be established");
  await expect(refusal(page, "membership_incomplete")).toContainText("fails closed");
  await page.getByLabel("Members of acme/sre").fill("sam");
  await expect(title(page)).toHaveText("Approved by break-glass override");

  // A later review by sam replaces the override.
  await page.getByRole("button", { name: "Add a review" }).click();
  await page.getByLabel("Reviewer 2 login").fill("sam");
  await page.getByLabel("Reviewer 2 user ID").fill("107");
  await expect(refusal(page, "superseded")).toContainText("a later review by sam replaces it");
  await expect(conclusion(page)).toHaveText("failure");
  await page.getByRole("button", { name: "Remove review by sam" }).nth(1).click();
  await expect(title(page)).toHaveText("Approved by break-glass override");

  // The first line must start with the marker.
  await page.getByLabel("Review 1 body, first line").fill("break-glass: short");
  await expect(refusal(page, "short_reason")).toBeVisible();
  await page.getByLabel("Review 1 body, first line").fill("LGTM");
  await expect(section(page)).toHaveCount(0);
  await page.getByLabel("Review 1 body, first line").fill("break-glass: checkout is down; reverting the bad flag");
  await expect(title(page)).toHaveText("Approved by break-glass override");

  // Only the organization enables it.
  const organization = page.getByLabel("Organization policy", { exact: true });
  await organization.fill((await organization.inputValue()).replace(/\[break_glass\][\s\S]*$/, ""));
  await expect(refusal(page, "not_enabled")).toContainText("has no [break_glass] section");
  await expect(conclusion(page)).toHaveText("failure");
});

test("the policy editors know the section: a repository policy naming it and a bad organization section are errors", async ({ page }) => {
  await open(page, "break-glass");
  await page.getByLabel("Repository policy", { exact: true }).fill('schema_version = 1\nenabled = true\n[break_glass]\nteams = ["devs"]\n');
  await expect(page.getByLabel("Repository policy errors")).toContainText("break_glass: only the organization policy can enable break-glass overrides");
  await expect(title(page)).toHaveText("Repository policy is invalid");
  await page.getByLabel("Repository policy", { exact: true }).fill("schema_version = 1\nenabled = true\n");
  await expect(title(page)).toHaveText("Approved by break-glass override");
  const organization = page.getByLabel("Organization policy", { exact: true });
  await organization.fill('schema_version = 1\n[break_glass]\nteams = ["acme/sre"]\nmin_reason_length = 5\nrepos = 1\n');
  const errors = page.getByLabel("Organization policy errors");
  for (const location of ["break_glass.teams[0]", "break_glass.min_reason_length", "break_glass.repos"]) await expect(errors).toContainText(location);
  await expect(title(page)).toHaveText("Organization policy is invalid");
});

test("the accessibility scan finds no violation in the break-glass explanations", async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 1000 });
  for (const scenario of ["break-glass", "break-glass-refused"]) {
    await open(page, scenario);
    await expect(section(page)).toBeVisible();
    const within = await new AxeBuilder({ page }).include('[data-testid="break-glass"]').analyze();
    expect(within.violations.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`), scenario).toEqual([]);
    const whole = await new AxeBuilder({ page }).analyze();
    const serious = whole.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    expect(serious.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`), scenario).toEqual([]);
  }
});
