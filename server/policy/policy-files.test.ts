import { describe, expect, test } from "bun:test";
import { parseOrganizationPolicy, parseRepositoryPolicy, repositoryPolicyOptsOut, type PolicyError } from "./policy-files.ts";

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
