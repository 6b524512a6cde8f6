import { describe, expect, test } from "bun:test";
import { repositoryEnrollment } from "./analyze.ts";
import type { FileRead } from "./evidence.ts";
import { MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";

/** Enrollment of a merge (DESIGN 3.12): the repository policy at its base commit, read as the evaluation reads opt-in. */
const found = (text: string): FileRead => ({ kind: "found", path: ".forge/service-policy.toml", text, bytes: text.length });

describe("repository enrollment at a commit", () => {
  test("no policy, enabled = false (even in an invalid file), or a valid policy without enabled = true is not enrolled", () => {
    expect(repositoryEnrollment({ kind: "missing" })).toBe("not_enrolled");
    expect(repositoryEnrollment(found("schema_version = 1\nenabled = false\n"))).toBe("not_enrolled");
    expect(repositoryEnrollment(found("enabled = false\nrequired_approvals = 99\nunknown_field = 1\n"))).toBe("not_enrolled");
    expect(repositoryEnrollment(found("schema_version = 1\nrequired_approvals = 2\n"))).toBe("not_enrolled");
  });

  test("an enabled policy, an invalid one and one over its bound are enrolled: the service judges those repositories (fail closed)", () => {
    expect(repositoryEnrollment(found("schema_version = 1\nenabled = true\n"))).toBe("enrolled");
    expect(repositoryEnrollment(found("schema_version = 1\nenabled = true\nunknown_field = 1\n"))).toBe("enrolled");
    expect(repositoryEnrollment({ kind: "too_large", path: ".forge/service-policy.toml", bytes: MAX_POLICY_FILE_BYTES + 1 })).toBe("enrolled");
  });

  test("a read that did not complete is unknown: read again later, never guessed", () => {
    expect(repositoryEnrollment({ kind: "incomplete", cause: "transient", detail: "503" })).toBe("unknown");
  });
});
