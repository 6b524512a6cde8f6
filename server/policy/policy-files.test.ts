import { describe, expect, test } from "bun:test";
import { DEFAULT_BREAK_GLASS_REASON_LENGTH, MAX_BREAK_GLASS_REASON_LENGTH, MAX_BREAK_GLASS_TEAMS, MAX_TEAM_SLUG_CHARS, MIN_BREAK_GLASS_REASON_LENGTH } from "./bounds.ts";
import { breakGlassSettings, parseOrganizationPolicy, parseRepositoryPolicy, REPOSITORY_BREAK_GLASS_MESSAGE, repositoryPolicyOptsOut, type PolicyError } from "./policy-files.ts";

const errorsOf = (result: { kind: string; errors?: readonly PolicyError[] }) => (result.kind === "invalid" ? result.errors! : []);
const locations = (result: { kind: string; errors?: readonly PolicyError[] }) => errorsOf(result).map((error) => error.location);

describe("repository policy", () => {
  test("the documented example is valid", () => {
    const result = parseRepositoryPolicy(`schema_version = 1
enabled = true
required_approvals = 1
[[delegations]]
app = "docs-review-bot"
paths = ["docs/**"]
owners = ["@acme/docs"]
required_label = "bot-review"
`);
    expect(result).toEqual({
      kind: "ok",
      policy: {
        schema_version: 1,
        enabled: true,
        required_approvals: 1,
        delegations: [{ app: "docs-review-bot", paths: ["docs/**"], owners: ["@acme/docs"], required_label: "bot-review" }],
      },
    });
  });
  test("a TOML syntax error names its line and column", () => {
    expect(locations(parseRepositoryPolicy("schema_version = 1\nenabled = \n"))).toEqual(["line 2, column 11"]);
  });
  test("an unknown top-level field is rejected with its name", () => {
    expect(locations(parseRepositoryPolicy("schema_version = 1\nenabeld = true\n"))).toEqual(["enabeld"]);
  });
  test("a repository policy cannot enroll an App: trusted_apps is an unknown field there", () => {
    expect(locations(parseRepositoryPolicy('schema_version = 1\n[[trusted_apps]]\nslug = "x"\napp_id = 1\n'))).toEqual(["trusted_apps"]);
  });
  test("a repository policy cannot carry guardrails to remove a non-delegable path", () => {
    expect(locations(parseRepositoryPolicy("schema_version = 1\n[guardrails]\nnon_delegable_paths = []\n"))).toEqual(["guardrails"]);
  });
  test("an unknown field inside a delegation is rejected with its path", () => {
    expect(locations(parseRepositoryPolicy('schema_version = 1\n[[delegations]]\napp = "a"\npaths = ["x"]\nlabel = "y"\n'))).toEqual(["delegations[0].label"]);
  });
  test("a wrong type is rejected", () => {
    expect(locations(parseRepositoryPolicy('schema_version = 1\nenabled = "yes"\n'))).toEqual(["enabled"]);
    expect(locations(parseRepositoryPolicy("schema_version = 1\nrequired_approvals = 1.5\n"))).toEqual(["required_approvals"]);
  });
  test("schema_version must be 1 and is required", () => {
    expect(locations(parseRepositoryPolicy("schema_version = 2\n"))).toEqual(["schema_version"]);
    expect(parseRepositoryPolicy("enabled = true\n").kind).toBe("invalid");
  });
  test("a delegation needs at least one path, and every path must be a valid pattern", () => {
    expect(locations(parseRepositoryPolicy('schema_version = 1\n[[delegations]]\napp = "a"\npaths = []\n'))).toEqual(["delegations[0].paths"]);
    expect(locations(parseRepositoryPolicy('schema_version = 1\n[[delegations]]\napp = "a"\npaths = ["docs/**", "!x"]\n'))).toEqual(["delegations[0].paths[1]"]);
  });
  test("delegation owners must use owner syntax", () => {
    expect(locations(parseRepositoryPolicy('schema_version = 1\n[[delegations]]\napp = "a"\npaths = ["x"]\nowners = ["docs"]\n'))).toEqual(["delegations[0].owners[0]"]);
  });
  test("a date value where a string is expected is rejected", () => {
    expect(parseRepositoryPolicy("schema_version = 1\n[[delegations]]\napp = 1979-05-27\npaths = [\"x\"]\n").kind).toBe("invalid");
  });
  test("prototype-polluting keys are rejected", () => {
    expect(parseRepositoryPolicy('schema_version = 1\n[__proto__]\nx = 1\n').kind).toBe("invalid");
  });
  test("enabled = false is recognised even in an otherwise invalid file", () => {
    expect(repositoryPolicyOptsOut("schema_version = 7\nenabled = false\nother = 1\n")).toBe(true);
    expect(repositoryPolicyOptsOut("schema_version = 1\nenabled = true\n")).toBe(false);
    expect(repositoryPolicyOptsOut("enabled = false\n[[[")).toBe(false);
  });
});

describe("organization policy", () => {
  test("the documented example is valid", () => {
    const result = parseOrganizationPolicy(`schema_version = 1
[[trusted_apps]]
slug = "docs-review-bot"
app_id = 12345
[guardrails]
non_delegable_paths = ["deploy/**", "/Makefile"]
`);
    expect(result.kind).toBe("ok");
  });
  test("an App ID beyond safe integers is rejected", () => {
    expect(locations(parseOrganizationPolicy('schema_version = 1\n[[trusted_apps]]\nslug = "a"\napp_id = 9223372036854775807\n'))).toEqual(["trusted_apps[0].app_id"]);
  });
  test("a non-positive App ID is rejected", () => {
    expect(locations(parseOrganizationPolicy('schema_version = 1\n[[trusted_apps]]\nslug = "a"\napp_id = 0\n'))).toEqual(["trusted_apps[0].app_id"]);
  });
  test("an App slug with invalid characters is rejected", () => {
    expect(locations(parseOrganizationPolicy('schema_version = 1\n[[trusted_apps]]\nslug = "Bad Slug"\napp_id = 1\n'))).toEqual(["trusted_apps[0].slug"]);
  });
  test("an App enrolled twice is rejected", () => {
    const twice = 'schema_version = 1\n[[trusted_apps]]\nslug = "a"\napp_id = 1\n[[trusted_apps]]\nslug = "a"\napp_id = 2\n';
    expect(locations(parseOrganizationPolicy(twice))).toEqual(["trusted_apps[1].slug"]);
  });
  test("an invalid guardrail pattern is rejected with its index", () => {
    expect(locations(parseOrganizationPolicy('schema_version = 1\n[guardrails]\nnon_delegable_paths = ["ok/**", "[abc]"]\n'))).toEqual(["guardrails.non_delegable_paths[1]"]);
  });
  test("unknown organization fields are rejected", () => {
    expect(locations(parseOrganizationPolicy("schema_version = 1\nenabled = true\n"))).toEqual(["enabled"]);
    expect(locations(parseOrganizationPolicy("schema_version = 1\n[guardrails]\nallow = []\n"))).toEqual(["guardrails.allow"]);
  });
});

describe("organization policy [break_glass] (DESIGN 3.11)", () => {
  const org = (section: string) => parseOrganizationPolicy(`schema_version = 1\n[break_glass]\n${section}`);
  test("teams and min_reason_length are read; min_reason_length defaults to 20", () => {
    const full = org('teams = ["sre-on-call", "incident_cmd"]\nmin_reason_length = 40\n');
    expect(full.kind).toBe("ok");
    expect(breakGlassSettings(full.kind === "ok" ? full.policy : null)).toEqual({ teams: ["sre-on-call", "incident_cmd"], minReasonLength: 40 });
    const defaulted = org('teams = ["sre"]\n');
    expect(breakGlassSettings(defaulted.kind === "ok" ? defaulted.policy : null)).toEqual({ teams: ["sre"], minReasonLength: DEFAULT_BREAK_GLASS_REASON_LENGTH });
    expect(DEFAULT_BREAK_GLASS_REASON_LENGTH).toBe(20);
  });
  test("without the section there is no override", () => {
    const none = parseOrganizationPolicy("schema_version = 1\n");
    expect(breakGlassSettings(none.kind === "ok" ? none.policy : null)).toBeNull();
    expect(breakGlassSettings(null)).toBeNull();
  });
  test("min_reason_length is 10..500", () => {
    expect(org(`teams = ["sre"]\nmin_reason_length = ${MIN_BREAK_GLASS_REASON_LENGTH}\n`).kind).toBe("ok");
    expect(org(`teams = ["sre"]\nmin_reason_length = ${MAX_BREAK_GLASS_REASON_LENGTH}\n`).kind).toBe("ok");
    expect(locations(org(`teams = ["sre"]\nmin_reason_length = ${MIN_BREAK_GLASS_REASON_LENGTH - 1}\n`))).toEqual(["break_glass.min_reason_length"]);
    expect(locations(org(`teams = ["sre"]\nmin_reason_length = ${MAX_BREAK_GLASS_REASON_LENGTH + 1}\n`))).toEqual(["break_glass.min_reason_length"]);
    expect(locations(org('teams = ["sre"]\nmin_reason_length = "20"\n'))).toEqual(["break_glass.min_reason_length"]);
  });
  test("a team that is not a slug is rejected with its index", () => {
    expect(locations(org('teams = ["sre", "acme/sre"]\n'))).toEqual(["break_glass.teams[1]"]);
    expect(locations(org('teams = ["SRE"]\n'))).toEqual(["break_glass.teams[0]"]);
    expect(locations(org('teams = ["on call"]\n'))).toEqual(["break_glass.teams[0]"]);
    expect(locations(org(`teams = ["${"a".repeat(MAX_TEAM_SLUG_CHARS + 1)}"]\n`))).toEqual(["break_glass.teams[0]"]);
    expect(org(`teams = ["${"a".repeat(MAX_TEAM_SLUG_CHARS)}"]\n`).kind).toBe("ok");
  });
  test("teams is required, not empty, and at most MAX_BREAK_GLASS_TEAMS long", () => {
    expect([...new Set(locations(org("min_reason_length = 20\n")))]).toEqual(["break_glass.teams"]);
    expect(locations(org("teams = []\n"))).toEqual(["break_glass.teams"]);
    const many = (n: number) => `teams = [${Array.from({ length: n }, (_, i) => `"t${i}"`).join(", ")}]\n`;
    expect(org(many(MAX_BREAK_GLASS_TEAMS)).kind).toBe("ok");
    expect(locations(org(many(MAX_BREAK_GLASS_TEAMS + 1)))).toEqual(["break_glass.teams"]);
  });
  test("an unknown key in the section is an error", () => {
    expect(locations(org('teams = ["sre"]\nrepositories = ["*"]\n'))).toEqual(["break_glass.repositories"]);
  });
});

describe("repository policy naming break_glass (DESIGN 3.11)", () => {
  test("is a policy error that says only the organization policy can enable it", () => {
    const result = parseRepositoryPolicy('schema_version = 1\nenabled = true\n[break_glass]\nteams = ["devs"]\n');
    expect(errorsOf(result)).toEqual([{ location: "break_glass", message: REPOSITORY_BREAK_GLASS_MESSAGE }]);
  });
  test("is an error even when empty or narrowing", () => {
    expect(locations(parseRepositoryPolicy("schema_version = 1\nenabled = true\n[break_glass]\n"))).toEqual(["break_glass"]);
    expect(locations(parseRepositoryPolicy("schema_version = 1\nenabled = true\nbreak_glass = false\n"))).toEqual(["break_glass"]);
  });
});
