import { expect, type Page, type test as playwrightTest } from "@playwright/test";

/**
 * For every test of the calling spec: no request may leave the service's origin (each one is aborted and listed), and no
 * console error or uncaught page error may appear, except console errors `allowedConsoleError` matches (a page that shows a
 * refused request by design). `watch` puts another page of the test (a second tab) under the same console rule.
 */
export function guardPages(test: typeof playwrightTest, options: { allowedConsoleError?: RegExp } = {}): { watch(page: Page): void } {
  let external: string[] = [];
  let consoleErrors: string[] = [];
  const watch = (page: Page) => {
    page.on("console", (message) => {
      if (message.type() === "error" && !options.allowedConsoleError?.test(message.text())) consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(error.message));
  };
  test.beforeEach(async ({ page, baseURL }) => {
    external = [];
    consoleErrors = [];
    const origin = new URL(baseURL!).origin;
    await page.route(
      (url) => url.origin !== origin,
      (route) => {
        external.push(route.request().url());
        return route.abort();
      },
    );
    watch(page);
  });
  test.afterEach(() => {
    expect(external, "requests that left the service's origin").toEqual([]);
    expect(consoleErrors, "console errors").toEqual([]);
  });
  return { watch };
}
