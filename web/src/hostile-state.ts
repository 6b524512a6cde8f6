// Hostile playground inputs for the input-limit tests (issue 16 item 7), shared by the unit tests and the Playwright spec:
// logins and teams named like Object.prototype members, and a link fragment that inflates far past the state limit.
import type { Lookup } from "../../server/evaluation/index.ts";
import { baseEvidence, HEAD } from "./scenarios.ts";
import { DEFAULT_SETTINGS, foundFile, STATE_VERSION, type PlaygroundState } from "./state.ts";

/** Names that are properties of every plain object: as record keys they read inherited values or set the prototype. */
export const HOSTILE_NAMES = ["__proto__", "constructor", "hasOwnProperty"] as const;

const found = <T>(value: T): Lookup<T> => ({ kind: "found", value });

/**
 * `@__proto__` owns src/, `@acme/constructor` owns docs/; `__proto__` and `hasOwnProperty` approve. `hasOwnProperty` is a
 * collaborator without an organization membership and `constructor` a member without a permission, so the directory
 * editor reads keys a record does not have. Expected: success, "All 2 owner sets approved".
 * Built with Object.fromEntries, which makes `__proto__` an own key as JSON.parse does for a link.
 */
export function hostileNamesState(): PlaygroundState {
  const base = baseEvidence();
  const [proto, constructor, hasOwn] = HOSTILE_NAMES;
  return {
    version: STATE_VERSION,
    settings: DEFAULT_SETTINGS,
    evidence: {
      ...base,
      codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: foundFile("CODEOWNERS", `/src/ @${proto}\n/docs/ @acme/${constructor}\n`) },
      files: { complete: true, items: [{ filename: "src/app.ts", status: "modified" }, { filename: "docs/guide.md", status: "modified" }] },
      pullRequest: { ...base.pullRequest, changedFiles: 2 },
      reviews: {
        complete: true,
        items: [
          { id: 1, user: { id: 301, login: proto, type: "User" }, state: "APPROVED", commitId: HEAD },
          { id: 2, user: { id: 302, login: hasOwn, type: "User" }, state: "APPROVED", commitId: HEAD },
        ],
      },
      directory: {
        collaborators: Object.fromEntries([[proto, found({ permission: "write" })], [hasOwn, found({ permission: "write" })]]),
        organizationMemberships: Object.fromEntries([[proto, found({ state: "active" })], [constructor, found({ state: "active" })]]),
        teams: Object.fromEntries([
          [`acme/${constructor}`, { team: found({ privacy: "closed" }), repository: found({ push: true }), memberships: Object.fromEntries([[hasOwn, found({ state: "active" })], [proto, { kind: "not_found" }]]) }],
        ]),
        apps: {},
        botUsers: {},
      },
    },
  };
}

/** A `v1.d.` fragment (without `#`) of `mebibytes` MiB of spaces, deflated to about a thousandth of that. */
export async function inflatingLink(mebibytes: number): Promise<string> {
  const chunk = new Uint8Array(2 ** 20).fill(0x20);
  let left = mebibytes;
  const input = new ReadableStream<Uint8Array<ArrayBuffer>>({ pull: (controller) => (left-- > 0 ? controller.enqueue(chunk) : controller.close()) });
  const deflated = await new Response(input.pipeThrough(new CompressionStream("deflate-raw"))).arrayBuffer();
  return `v1.d.${Buffer.from(deflated).toString("base64url")}`;
}
