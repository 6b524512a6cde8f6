import { expect, test } from "bun:test";
import { appName, buildManifest, creationUrl, isOrganizationLogin, SETUP_EVENTS, SETUP_PERMISSIONS } from "./manifest.ts";

test("the manifest has exactly the permissions and events the service uses (the spec's, and merge queues'), webhook and redirect URLs, and is private", () => {
  const m = buildManifest({ publicUrl: "https://approvals.example.com", setupUrl: "https://approvals.example.com" }, "acme");
  expect(m.public).toBe(false);
  expect(m.default_permissions).toEqual({ checks: "write", statuses: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read", merge_queues: "read" });
  expect(m.default_events).toEqual([
    "check_run", "installation_target", "label", "member", "membership", "merge_group", "organization", "pull_request", "pull_request_review", "push", "repository", "team", "team_add",
  ]);
  expect(m.hook_attributes).toEqual({ url: "https://approvals.example.com/webhooks/forge", active: true });
  expect(m.redirect_url).toBe("https://approvals.example.com/setup/callback");
  expect(m.url).toBe("https://approvals.example.com");
});

test("set up through a port-forward, the forge still gets the public webhook URL and sends the browser back to the loopback one", () => {
  const m = buildManifest({ publicUrl: "https://approvals.example.com", setupUrl: "http://127.0.0.1:8080" }, "acme");
  expect(m.hook_attributes).toEqual({ url: "https://approvals.example.com/webhooks/forge", active: true });
  expect(m.url).toBe("https://approvals.example.com");
  expect(m.redirect_url).toBe("http://127.0.0.1:8080/setup/callback");
});

test("no Actions, Administration, Issues, Workflows or Pull requests write", () => {
  for (const name of ["actions", "administration", "issues", "workflows"]) expect(SETUP_PERMISSIONS).not.toHaveProperty(name);
  expect(SETUP_PERMISSIONS.pull_requests).toBe("read");
  expect(SETUP_EVENTS).not.toContain("installation");
  expect(SETUP_EVENTS).not.toContain("installation_repositories");
});

test("the App name fits the forge's 34 characters", () => {
  expect(appName(null)).toBe("Code-owner approval");
  expect(appName("acme")).toBe("acme code-owner approval");
  expect(appName("a".repeat(39))).toBe("Code-owner approval");
});

test("the creation page is the organization's App settings or the personal ones, carrying the state", () => {
  expect(creationUrl("https://github.com", "acme", "s.t")).toBe("https://github.com/organizations/acme/settings/apps/new?state=s.t");
  expect(creationUrl("http://127.0.0.1:9000/", null, "s")).toBe("http://127.0.0.1:9000/settings/apps/new?state=s");
});

test("organization logins as the forge allows them", () => {
  for (const good of ["acme", "Acme-Corp", "a", "a1-b2", "x".repeat(39)]) expect(isOrganizationLogin(good)).toBe(true);
  for (const bad of ["", "-acme", "acme-", "ac--me", "ac me", "acme/../x", "x".repeat(40), "acme%2F", "ácme", "<script>"]) expect(isOrganizationLogin(bad)).toBe(false);
});
