import { expect, test } from "@playwright/test";

/** The API reference page renders from the binary's own assets: no request may leave loopback, and the console stays clean. */
let external: string[] = [];
let consoleErrors: string[] = [];
test.beforeEach(async ({ page }) => {
  external = [];
  consoleErrors = [];
  await page.route(/^(?!https?:\/\/127\.0\.0\.1[:/])[a-z]+:\/\//, (route) => {
    external.push(route.request().url());
    return route.abort();
  });
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
});
test.afterEach(() => {
  expect(external, "requests that left loopback").toEqual([]);
  expect(consoleErrors, "console errors").toEqual([]);
});

test("the API reference lists the runtime identity, health and webhook operations", async ({ page }) => {
  await page.goto("/api/docs");
  await expect(page.locator(".swagger-ui .info .title")).toContainText("Code-owner approval check service");
  for (const path of ["/api/runtime-identity", "/health/live", "/health/ready", "/webhooks/forge"]) {
    await expect(page.locator(`.opblock-summary-path[data-path="${path}"]`)).toBeVisible();
  }
});

test("trying the runtime identity operation from the page returns the live document", async ({ page }) => {
  await page.goto("/api/docs");
  const block = page.locator(".opblock", { has: page.locator('.opblock-summary-path[data-path="/api/runtime-identity"]') });
  await block.locator(".opblock-summary").click();
  await block.getByRole("button", { name: "Try it out" }).click();
  await block.getByRole("button", { name: "Execute" }).click();
  await expect(block.locator(".live-responses-table tbody .response-col_status").first()).toContainText("200");
  await expect(block.locator(".live-responses-table .highlight-code").first()).toContainText('"schema_version": 1');
});
