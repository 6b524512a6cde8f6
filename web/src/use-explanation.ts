// Runs the engine off the main thread. Only the newest state matters: while the worker is busy, later edits replace each
// other and only the last one is sent when it is free, so a burst of keystrokes costs one evaluation, not one each.
import { useEffect, useRef, useState } from "react";
import type { Explanation } from "./engine.ts";
import type { EngineRequest } from "./engine.worker.ts";
import type { PlaygroundState } from "./state.ts";

type Reply =
  | { kind: "explanation"; seq: number; ok: true; explanation: Explanation }
  | { kind: "explanation"; seq: number; ok: false; error: string }
  | { kind: "fragment"; seq: number; fragment: string };

export interface EngineView {
  readonly explanation: Explanation | null;
  readonly error: string | null;
  /** Milliseconds from the edit to the worker's answer arriving on the page. */
  readonly latency: number | null;
  readonly busy: boolean;
  /** The URL fragment encoding the state of the latest answer (encoded in the worker). */
  readonly fragment: string | null;
  /** Explanations received so far (lets tests and the timing line tell one answer from the next). */
  readonly revision: number;
}

export function useExplanation(state: PlaygroundState, query: string): EngineView {
  const [view, setView] = useState<EngineView>({ explanation: null, error: null, latency: null, busy: true, fragment: null, revision: 0 });
  const kick = useRef<((request: EngineRequest, editedAt: number) => void) | null>(null);
  const inFlight = useRef<{ seq: number; editedAt: number } | null>(null);
  const pending = useRef<{ request: EngineRequest; editedAt: number } | null>(null);
  const seq = useRef(0);
  const lastState = useRef<PlaygroundState | null>(null);
  const lastEncodeSeq = useRef(0);

  useEffect(() => {
    const worker = new Worker(new URL("./engine.worker.ts", import.meta.url), { type: "module", name: "policy-engine" });
    const send = (request: EngineRequest, editedAt: number) => {
      inFlight.current = { seq: request.seq, editedAt };
      worker.postMessage(request);
    };
    worker.onmessage = (event: MessageEvent<Reply>) => {
      const reply = event.data;
      if (reply.kind === "fragment") {
        // Only the encoding of the newest state may reach the link.
        if (reply.seq === lastEncodeSeq.current) setView((previous) => ({ ...previous, fragment: reply.fragment }));
        return;
      }
      const flight = inFlight.current;
      inFlight.current = null;
      const next = pending.current;
      pending.current = null;
      if (next !== null) send(next.request, next.editedAt);
      const latency = flight === null ? null : performance.now() - flight.editedAt;
      if (reply.ok) setView((previous) => ({ ...previous, explanation: reply.explanation, error: null, latency, busy: next !== null, revision: previous.revision + 1 }));
      else setView((previous) => ({ ...previous, error: reply.error, busy: next !== null, revision: previous.revision + 1 }));
    };
    kick.current = (request, editedAt) => {
      if (inFlight.current === null) send(request, editedAt);
      else {
        const encode = request.encode || (pending.current?.request.encode ?? false);
        if (encode) lastEncodeSeq.current = request.seq;
        pending.current = { request: { ...request, encode }, editedAt };
      }
    };
    return () => {
      worker.terminate();
      kick.current = null;
      inFlight.current = null;
      pending.current = null;
    };
  }, []);

  useEffect(() => {
    if (kick.current === null) return;
    seq.current += 1;
    const request = { seq: seq.current, state, query, encode: lastState.current !== state };
    lastState.current = state;
    if (request.encode) lastEncodeSeq.current = request.seq;
    kick.current(request, performance.now());
    setView((previous) => (previous.busy ? previous : { ...previous, busy: true }));
  }, [state, query]);

  return view;
}
