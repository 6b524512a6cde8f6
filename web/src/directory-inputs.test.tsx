import { describe, expect, test } from "bun:test";
import { renderToStaticMarkup } from "react-dom/server";
import { evaluate, renderCheck } from "../../server/evaluation/index.ts";
import { decodeState, encodeState } from "./codec.ts";
import { addMissingFacts, DirectoryInputs } from "./directory-inputs.tsx";
import { HOSTILE_NAMES, hostileNamesState } from "./hostile-state.ts";
import { baseEvidence } from "./scenarios.ts";
import { formatMemberships, parseMemberships } from "./state.ts";

describe("names that are Object.prototype members (__proto__, constructor, hasOwnProperty)", () => {
  test("are ordinary logins and teams to the engine, also after a round trip through a link", async () => {
    const state = hostileNamesState();
    const decoded = await decodeState(await encodeState(state));
    expect(decoded).toEqual({ ok: true, state });
    if (!decoded.ok) return;
    const check = renderCheck(evaluate(decoded.state.evidence, decoded.state.settings));
    expect(check.title).toBe("All 2 owner sets approved");
  });

  test("the directory editor shows them, including keys one record has and another lacks", () => {
    const state = hostileNamesState();
    const html = renderToStaticMarkup(<DirectoryInputs evidence={state.evidence} plan={null} update={() => {}} />);
    for (const name of HOSTILE_NAMES) expect(html).toContain(`aria-label="Login ${name}"`);
    expect(html).toContain('aria-label="Team acme/constructor"');
    expect(html).toContain('value="hasOwnProperty, __proto__:404"');
  });

  test("adding the facts an evaluation still needs keeps them as own entries", () => {
    const evidence = { ...baseEvidence(), directory: { collaborators: {}, organizationMemberships: {}, teams: {}, apps: {}, botUsers: {} } };
    const plan = { collaborators: ["__proto__", "constructor"], organizationMemberships: ["hasOwnProperty"], teams: [{ team: "acme/__proto__", members: ["__proto__", "toString"], info: false }], apps: ["constructor"], botUsers: ["__proto__"] };
    const { directory } = addMissingFacts(evidence, plan);
    const notFound = { kind: "not_found" } as const;
    expect(Object.entries(directory.collaborators)).toEqual([["__proto__", notFound], ["constructor", notFound]]);
    expect(Object.entries(directory.organizationMemberships)).toEqual([["hasOwnProperty", notFound]]);
    expect(Object.entries(directory.teams["acme/__proto__"]!.memberships)).toEqual([["__proto__", notFound], ["toString", notFound]]);
    expect(Object.entries(directory.apps)).toEqual([["constructor", notFound]]);
    expect(Object.entries(directory.botUsers)).toEqual([["__proto__", notFound]]);
  });

  test("team membership text keeps them as members", () => {
    const record = parseMemberships("__proto__, constructor:pending toString:404");
    expect(Object.keys(record)).toEqual(["__proto__", "constructor", "toString"]);
    expect(formatMemberships(record)).toBe("__proto__, constructor:pending, toString:404");
  });
});
