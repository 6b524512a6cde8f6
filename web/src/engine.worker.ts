// The decision core in a Web Worker: a 10,000-rule CODEOWNERS with 3,000 files never blocks typing (issue 10 item 8).
import { explain } from "./engine.ts";
import type { PlaygroundState } from "./state.ts";

export interface EngineRequest {
  readonly seq: number;
  readonly state: PlaygroundState;
  readonly query: string;
}

self.onmessage = (event: MessageEvent<EngineRequest>) => {
  const { seq, state, query } = event.data;
  try {
    self.postMessage({ seq, ok: true, explanation: explain(state, query) });
  } catch (error) {
    self.postMessage({ seq, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
};
