import { describe, expect, test } from "bun:test";
import { decodeState, encodeState } from "./codec.ts";
import { inflatingLink } from "./hostile-state.ts";
import { largeState } from "./large-state.ts";
import { readState, readStateText } from "./read-state.ts";
import { baseEvidence, SCENARIOS } from "./scenarios.ts";
import {
  codeownersFile,
  codeownersIn,
  DEFAULT_SETTINGS,
  formatFiles,
  formatMemberships,
  parseFiles,
  parseMemberships,
  STATE_VERSION,
  withChangePreview,
  withCodeownersAt,
  withForgeDirectory,
  withHeadCodeownersAt,
  withoutChangePreview,
  withRepositoryPolicy,
  foundFile,
} from "./state.ts";
import { evaluate } from "../../server/evaluation/evaluate.ts";

const base = () => SCENARIOS[0]!.build();

describe("URL fragment encoding", () => {
  test("round-trips text with non-ASCII, control and bidi characters exactly", async () => {
    const state = base();
    const text = "/docs/ @acme/docs # naïve café ✓ 日本\u202E\u0000\n/src/ @alice\n";
    const edited = { ...state, evidence: withCodeownersAt(state.evidence, "CODEOWNERS", text, ".forge") };
    const decoded = await decodeState(await encodeState(edited));
    expect(decoded).toEqual({ ok: true, state: edited });
  });

  test("the fragment is URL-safe and compressed", async () => {
    const state = largeState(2_000, 500);
    const encoded = await encodeState(state);
    expect(encoded).toMatch(/^v1\.d\.[A-Za-z0-9_-]+$/);
    expect(encoded.length).toBeLessThan(JSON.stringify(state).length / 4);
  });

  test("a leading # is accepted", async () => {
    const state = base();
    expect(await decodeState(`#${await encodeState(state)}`)).toEqual({ ok: true, state });
  });

  test("the uncompressed form is understood too", async () => {
    const state = base();
    const json = Buffer.from(JSON.stringify(state)).toString("base64url");
    expect(await decodeState(`v1.j.${json}`)).toEqual({ ok: true, state });
  });

  test("a link that inflates past the state limit is refused with a reason", async () => {
    expect(await decodeState(await inflatingLink(100))).toEqual({ ok: false, error: "the link holds more than 32 MiB of state" });
    expect(await decodeState(`v1.j.${"A".repeat(45 * 2 ** 20)}`)).toEqual({ ok: false, error: "the link holds more than 32 MiB of state" });
  });

  test("damaged links are refused with a reason, never half-applied", async () => {
    const good = await encodeState(base());
    expect(await decodeState("")).toEqual({ ok: false, error: "the link does not hold a playground state" });
    expect(await decodeState("v2.d.abc")).toEqual({ ok: false, error: "the link does not hold a playground state" });
    expect(await decodeState("v1.x.abc")).toEqual({ ok: false, error: "the link uses an unknown encoding" });
    expect(await decodeState(good.slice(0, good.length - 40))).toEqual({ ok: false, error: "the link is damaged" });
    expect(await decodeState("v1.d.!!!")).toEqual({ ok: false, error: "the link is damaged" });
    const notState = Buffer.from(JSON.stringify({ hello: 1 })).toString("base64url");
    expect(await decodeState(`v1.j.${notState}`)).toEqual({ ok: false, error: "neither a playground state nor an evidence document" });
  });
});

/** The link of `{ version: 1, evidence: baseEvidence(), settings: DEFAULT_SETTINGS }`, made before the change preview existed. */
const LINK_BEFORE_PREVIEW =
  "v1.d.xVdZbxs5DP4rAvsWTOP4yDVAgZ57PDQpmu7uQ8YINBI9I1QjqZLGWW_g_76gZDdO4lxdLJqHwCOSH8lPlEhdwRx9UNZAOSwA50qiEQjl1ffff27IPTobVLR-QRr20qCHErjoEAowvEMo4VLJBmOAIsu_LBytnvqGG_UPjwS1LMD1Wn_Gbz2GSFCm72rCmowKaJHLs5ZDCZPZSBzjkB_WY7k_O9g7Gh7zUT0WE7mPB7ND-h7xcT2BAmoeMBsN65EYywmSweHwaHQ85pN6XxzIQzyaHe_xtXxl9BlnUELHlYECeB9b6ykgJaEc7u0VoG2jDJTgeKS4Q-SR8rEOyUB6PotQzrgOWIDmNeoA5fm0ANFy06D8RWkMUA6XBczyzysQtnMaCSb6HgtQETuyukoqKxqDFwPu3G5ikrz2geK0Us0USlhOl7Qdc4WXD2KSmrAS014kzd2Z9Q0O3p2-_3D618mHz2e0-FUZSfAqBGUaSnSrfGZ7I6EgMlooN3UKiPh3hBJesA9z9IvYKtMwYyPreBQtSlajtpfpv2kCi5bFFpmwHllE3u1WZodt_XtN5TUgxcpU5gV745xWIhUSo8xKhiq26NkbrQQy69lbW-9WZkAMboNLaq9rW2e891b0HZqYEMsUlbQirKMa0MfgnqhItkJBp-2CcDKEdegT4gZQUhlsBbJuhfMrGjJEyVK5lMzY2soFM4gyscad83aOBNisdQcV1WK9iFRf44Phcrl5VD9ZrcTi_l1cFURAP1cCX7qkvhttp693NYgWO36xuivYKzasDBpea5TsFaOSq4zHb73yKC9yiFyHrEdpfVmzWqeKWKzToMVr9tnM-jsbcH4uUWOTyZxOK8OdY69YBaT0Mh-Bl7WNFVSGMiKv51k62NmpYLpJzvDwaFmA3biM_i92KOtToxe5GjYcMsENMRYi44aqOeWYFjJ3Kcmg--a-LLlzF4p4H47Gk_3s6sQSVKIW5-hZiNxIpjKlDq3TyKyhYAKyRBO5bXrupedKh2lljDUXmepa48UmlblwicyCVTD4yL8iVectbkfjg2UBUnkU6w4hrNa8tp5Hmy-fdPi2kD3nuk_rDn26hKjhwKVXEYGqubb1k6247JRJVujp6n62M6sb_mQz6hyRugdZUpN4rr9b9fgRqROGVrmnEbZuSFxENX8SWVssHiNqi8ljJG0xeYSdOxZLOmCc2tgVfG8C9EGrD_Ls1ZzToQahbaBueeNCfNC0D23uoWTT3dyM5xN7e_uMjRfZ7i7rN2S36N2QJdh18_mZbPxA0TxIx012n8uGdT-VjB84Dj9Kxv1lk9lwOaJbjeOh4NKwS72kAOo7UN4xTsi1jX-E1RR5S-G8tnH6mIvjvb3h9UC9FaGAmN8Lb7NTmrh5h78hl5-uXwyPTNH_8TGxnCa3GKMyTXbVovh6kufyszwIsMFqhOE0B-Sp4NMTJgautb383QQUvcd36Y0QVu-H5fJf";

describe("the change preview in the link", () => {
  test("a link made before the change preview decodes to the same state, with no head files", async () => {
    const decoded = await decodeState(LINK_BEFORE_PREVIEW);
    expect(decoded).toEqual({ ok: true, state: { version: STATE_VERSION, evidence: baseEvidence(), settings: DEFAULT_SETTINGS } });
    expect(decoded.ok && "headFiles" in decoded.state.evidence).toBe(false);
  });

  test("the second CODEOWNERS survives the link, location included", async () => {
    const state = base();
    const edited = { ...state, evidence: withHeadCodeownersAt(withChangePreview(state.evidence), ".forge/CODEOWNERS", "/src/ @carol\n/broken/ nobody\n", ".forge") };
    const decoded = await decodeState(await encodeState(edited));
    expect(decoded).toEqual({ ok: true, state: edited });
    expect(decoded.ok && codeownersIn(decoded.state.evidence.headFiles!.codeowners, ".forge")?.location).toBe(".forge/CODEOWNERS");
  });

  test("damaged head files are refused, naming the field", () => {
    const evidence = withChangePreview(baseEvidence());
    expect(readState({ ...evidence, headFiles: null })).toEqual({ ok: false, error: "evidence.headFiles must be an object" });
    expect(readState({ ...evidence, headFiles: { ...evidence.headFiles, codeowners: { "lib/CODEOWNERS": { kind: "missing" } } } })).toEqual({
      ok: false,
      error: "evidence.headFiles.codeowners has an unknown location lib/CODEOWNERS",
    });
    expect(readState({ ...evidence, headFiles: { codeowners: evidence.codeowners, repositoryPolicy: { kind: "found", path: "x" } } })).toEqual({
      ok: false,
      error: "evidence.headFiles.repositoryPolicy.text must be a string",
    });
  });
});

describe("editing the change preview", () => {
  test("adding the preview starts the head from the base's files; removing it restores the evidence exactly", () => {
    const evidence = baseEvidence();
    const previewed = withChangePreview(evidence);
    expect(previewed.headFiles).toEqual({ codeowners: evidence.codeowners, repositoryPolicy: evidence.repositoryPolicy });
    expect(withoutChangePreview(withHeadCodeownersAt(previewed, "CODEOWNERS", "* @zed\n", ".forge"))).toEqual(evidence);
  });

  test("editing the head's CODEOWNERS leaves the base's, which the decision reads, as it was", () => {
    const evidence = withChangePreview(baseEvidence());
    const edited = withHeadCodeownersAt(evidence, "docs/CODEOWNERS", "* @zed\n", ".forge");
    expect(edited.codeowners).toEqual(evidence.codeowners);
    expect(codeownersIn(edited.headFiles!.codeowners, ".forge")).toEqual({ location: "docs/CODEOWNERS", read: foundFile("docs/CODEOWNERS", "* @zed\n") });
    expect(edited.headFiles!.codeowners.CODEOWNERS).toEqual({ kind: "missing" });
  });

  test("the head's repository policy follows the base's while the pull request leaves it alone, and only then", () => {
    const evidence = withChangePreview(baseEvidence());
    const stricter = foundFile(DEFAULT_SETTINGS.policyPath, "schema_version = 1\nenabled = true\nrequired_approvals = 2\n");
    expect(withRepositoryPolicy(evidence, stricter).headFiles!.repositoryPolicy).toEqual(stricter);
    const changedByPullRequest = { ...evidence, headFiles: { ...evidence.headFiles!, repositoryPolicy: { kind: "missing" as const } } };
    expect(withRepositoryPolicy(changedByPullRequest, stricter).headFiles!.repositoryPolicy).toEqual({ kind: "missing" });
    expect("headFiles" in withRepositoryPolicy(baseEvidence(), stricter)).toBe(false);
  });
});

describe("reading states and evidence documents", () => {
  test("an explain --json document is read with its settings", () => {
    const evidence = baseEvidence();
    const settings = { ...DEFAULT_SETTINGS, allowInsecureChanges: true, checkName: "Custom / check" };
    const result = readState({ format: "service-evidence", version: 1, evidence, settings });
    expect(result).toEqual({ ok: true, state: { version: STATE_VERSION, evidence, settings } });
  });

  test("a review's body line (a break-glass request) is read when a string, and refused otherwise", () => {
    const state = SCENARIOS.find((scenario) => scenario.id === "break-glass")!.build();
    expect(readState(state)).toEqual({ ok: true, state });
    const reviews = state.evidence.reviews.complete ? state.evidence.reviews.items : [];
    const broken = { ...state.evidence, reviews: { complete: true, items: [{ ...reviews[0]!, bodyFirstLine: 7 }] } };
    expect(readState(broken)).toEqual({ ok: false, error: "evidence.reviews.items[0].bodyFirstLine must be a string" });
  });

  test("a link or document made before the forge directory was a setting is read under .forge", () => {
    const { forgeDirectory: _directory, ...older } = DEFAULT_SETTINGS;
    const result = readState({ version: STATE_VERSION, evidence: baseEvidence(), settings: older });
    expect(result.ok && result.state.settings.forgeDirectory).toBe(".forge");
  });

  test("a state under .github is read with .github's code-owners locations, and .forge's are refused there", () => {
    const state = withForgeDirectory(base(), ".github");
    expect(readState(state)).toEqual({ ok: true, state });
    const foreign = { ...state, evidence: { ...state.evidence, codeowners: { ".forge/CODEOWNERS": { kind: "missing" } } } };
    expect(readState(foreign)).toEqual({ ok: false, error: "evidence.codeowners has an unknown location .forge/CODEOWNERS" });
  });

  test("a forge directory the service refuses is refused, naming the setting", () => {
    for (const bad of ["", "..", ".a/b", "github", ".a\u0000"]) {
      const result = readState({ ...base(), settings: { ...DEFAULT_SETTINGS, forgeDirectory: bad } });
      expect(result.ok ? "accepted" : result.error).toMatch(/^settings\.forgeDirectory /);
    }
  });

  test("switching the forge directory moves the file read at the old directory's CODEOWNERS and the default policy path", () => {
    const evidence = withCodeownersAt(baseEvidence(), ".forge/CODEOWNERS", "* @bob\n", ".forge");
    const moved = withForgeDirectory({ version: STATE_VERSION, evidence, settings: DEFAULT_SETTINGS }, ".github");
    expect(moved.settings).toEqual({ ...DEFAULT_SETTINGS, forgeDirectory: ".github", policyPath: ".github/service-policy.toml" });
    expect(codeownersFile(moved.evidence, ".github")).toEqual({ location: ".github/CODEOWNERS", read: foundFile(".github/CODEOWNERS", "* @bob\n") });
    expect(moved.evidence.repositoryPolicy.kind === "found" && moved.evidence.repositoryPolicy.path).toBe(".github/service-policy.toml");
    expect(evaluate(moved.evidence, moved.settings).codeownersPath).toBe(".github/CODEOWNERS");
    expect(withForgeDirectory(moved, ".forge")).toEqual({ version: STATE_VERSION, evidence, settings: DEFAULT_SETTINGS });
  });

  test("switching the forge directory keeps a policy path that is not the old directory's default", () => {
    const custom = { ...DEFAULT_SETTINGS, policyPath: "ci/policy.toml" };
    expect(withForgeDirectory({ version: STATE_VERSION, evidence: baseEvidence(), settings: custom }, ".github").settings.policyPath).toBe("ci/policy.toml");
  });

  test("a bare Evidence object gets the default settings", () => {
    const evidence = baseEvidence();
    expect(readState(evidence)).toEqual({ ok: true, state: { version: STATE_VERSION, evidence, settings: DEFAULT_SETTINGS } });
  });

  test("a field evaluate() reads with the wrong type is refused, naming the field", () => {
    const evidence = baseEvidence();
    const broken = { ...evidence, pullRequest: { ...evidence.pullRequest, labels: "bug" } };
    expect(readState(broken)).toEqual({ ok: false, error: "evidence.pullRequest.labels must be a list" });
    const badLookup = { ...evidence, directory: { ...evidence.directory, collaborators: { alice: { kind: "maybe" } } } };
    expect(readState(badLookup)).toEqual({ ok: false, error: "evidence.directory.collaborators.alice.kind must be found, not_found or incomplete" });
    const badLocation = { ...evidence, codeowners: { "src/CODEOWNERS": { kind: "missing" } } };
    expect(readState(badLocation)).toEqual({ ok: false, error: "evidence.codeowners has an unknown location src/CODEOWNERS" });
  });

  test("explicit gaps survive: an incomplete listing stays incomplete", () => {
    const evidence = { ...baseEvidence(), reviews: { complete: false as const, cause: "over_bound" as const, detail: "more than 1000 reviews" } };
    const result = readState(evidence);
    expect(result.ok && result.state.evidence.reviews).toEqual(evidence.reviews);
  });

  test("text that is not JSON is refused", () => {
    expect(readStateText("{nope")).toEqual({ ok: false, error: "not valid JSON" });
  });
});

describe("editor formats", () => {
  test("changed files with renames round-trip through their text form", () => {
    const files = [
      { filename: "src/app.ts", status: "modified" },
      { filename: "docs/new.md", status: "renamed", previousFilename: "src/old.md" },
      { filename: "lib/a b.ts", status: "added" },
    ];
    expect(parseFiles(formatFiles(files))).toEqual(files);
  });

  test("a line without a status word is a modified path; a rename without its old path stays incomplete", () => {
    expect(parseFiles("src/app.ts\n\nrenamed docs/x.md\n")).toEqual([
      { filename: "src/app.ts", status: "modified" },
      { filename: "docs/x.md", status: "renamed", previousFilename: null },
    ]);
  });

  test("team memberships: a bare login is active, others carry their state", () => {
    const record = parseMemberships("bob, dave:pending carol:404, x:incomplete");
    expect(record.bob).toEqual({ kind: "found", value: { state: "active" } });
    expect(record.dave).toEqual({ kind: "found", value: { state: "pending" } });
    expect(record.carol).toEqual({ kind: "not_found" });
    expect(record.x?.kind).toBe("incomplete");
    expect(formatMemberships(record)).toBe("bob, dave:pending, carol:404, x:incomplete");
  });

  test("moving CODEOWNERS to a later location marks the earlier ones missing", () => {
    const evidence = withCodeownersAt(baseEvidence(), "docs/CODEOWNERS", "* @alice\n", ".forge");
    expect(evidence.codeowners[".forge/CODEOWNERS"]).toEqual({ kind: "missing" });
    expect(evidence.codeowners.CODEOWNERS).toEqual({ kind: "missing" });
    expect(codeownersFile(evidence, ".forge")?.location).toBe("docs/CODEOWNERS");
    expect(codeownersFile(withCodeownersAt(evidence, null, "", ".forge"), ".forge")).toBeNull();
  });
});
