// The decision core in a Web Worker: a 10,000-rule CODEOWNERS with 3,000 files never blocks typing (issue 10 item 8).
// After each explanation it also encodes the state for the URL fragment, so the page's thread does no heavy work at all.
import { encodeState } from "./codec.ts";
import { explain } from "./engine.ts";
import type { PlaygroundState } from "./state.ts";

export interface EngineRequest {
  readonly seq: number;
  readonly state: PlaygroundState;
  readonly query: string;
  /** Whether the state changed since the last request (a path-tester query alone does not change the link). */
  readonly encode: boolean;
}

/** The link is encoded once typing pauses, so encoding never delays the next keystroke's evaluation. */
const ENCODE_DELAY_MS = 200;
let encodeTimer: ReturnType<typeof setTimeout> | null = null;

self.onmessage = (event: MessageEvent<EngineRequest>) => {
  const { seq, state, query, encode } = event.data;
  try {
    self.postMessage({ kind: "explanation", seq, ok: true, explanation: explain(state, query) });
  } catch (error) {
    self.postMessage({ kind: "explanation", seq, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
  if (!encode) return;
  if (encodeTimer !== null) clearTimeout(encodeTimer);
  encodeTimer = setTimeout(() => {
    encodeTimer = null;
    encodeState(state).then(
      (fragment) => self.postMessage({ kind: "fragment", seq, fragment }),
      () => undefined,
    );
  }, ENCODE_DELAY_MS);
};
