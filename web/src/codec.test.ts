import { describe, expect, test } from "bun:test";
import { decodeState, encodeState } from "./codec.ts";
import { inflatingLink } from "./hostile-state.ts";
import { largeState } from "./large-state.ts";
import { readState, readStateText } from "./read-state.ts";
import { baseEvidence, SCENARIOS } from "./scenarios.ts";
import { DEFAULT_SETTINGS, formatFiles, formatMemberships, parseFiles, parseMemberships, withCodeownersAt, codeownersFile, STATE_VERSION } from "./state.ts";

const base = () => SCENARIOS[0]!.build();

describe("URL fragment encoding", () => {
  test("round-trips text with non-ASCII, control and bidi characters exactly", async () => {
    const state = base();
    const text = "/docs/ @acme/docs # naïve café ✓ 日本\u202E\u0000\n/src/ @alice\n";
    const edited = { ...state, evidence: withCodeownersAt(state.evidence, "CODEOWNERS", text) };
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

describe("reading states and evidence documents", () => {
  test("an explain --json document is read with its settings", () => {
    const evidence = baseEvidence();
    const settings = { ...DEFAULT_SETTINGS, allowInsecureChanges: true, checkName: "Custom / check" };
    const result = readState({ format: "service-evidence", version: 1, evidence, settings });
    expect(result).toEqual({ ok: true, state: { version: STATE_VERSION, evidence, settings } });
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
    const evidence = withCodeownersAt(baseEvidence(), "docs/CODEOWNERS", "* @alice\n");
    expect(evidence.codeowners[".forge/CODEOWNERS"]).toEqual({ kind: "missing" });
    expect(evidence.codeowners.CODEOWNERS).toEqual({ kind: "missing" });
    expect(codeownersFile(evidence)?.location).toBe("docs/CODEOWNERS");
    expect(codeownersFile(withCodeownersAt(evidence, null, ""))).toBeNull();
  });
});
