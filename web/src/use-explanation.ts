// Runs the engine off the main thread. Only the newest state matters: while the worker is busy, later edits replace each
// other and only the last one is sent when it is free, so a burst of keystrokes costs one evaluation, not one each.
import { useEffect, useRef, useState } from "react";
import type { Explanation } from "./engine.ts";
import type { EngineRequest } from "./engine.worker.ts";
import type { PlaygroundState } from "./state.ts";

type Reply = { seq: number; ok: true; explanation: Explanation } | { seq: number; ok: false; error: string };

export interface EngineView {
  readonly explanation: Explanation | null;
  readonly error: string | null;
  /** Milliseconds from the edit to the explanation on screen data (edit → reply), for the page's own timing line. */
  readonly latency: number | null;
  readonly busy: boolean;
}

export function useExplanation(state: PlaygroundState, query: string): EngineView {
  const [view, setView] = useState<EngineView>({ explanation: null, error: null, latency: null, busy: true });
  const kick = useRef<((request: EngineRequest, editedAt: number) => void) | null>(null);
  const inFlight = useRef<{ seq: number; sentAt: number; editedAt: number } | null>(null);
  const pending = useRef<{ request: EngineRequest; editedAt: number } | null>(null);
  const seq = useRef(0);

  useEffect(() => {
    const w = new Worker(new URL("./engine.worker.ts", import.meta.url), { type: "module", name: "policy-engine" });
    const send = (request: EngineRequest, editedAt: number) => {
      inFlight.current = { seq: request.seq, sentAt: performance.now(), editedAt };
      w.postMessage(request);
    };
    w.onmessage = (event: MessageEvent<Reply>) => {
      const reply = event.data;
      const flight = inFlight.current;
      inFlight.current = null;
      const next = pending.current;
      pending.current = null;
      if (next !== null) send(next.request, next.editedAt);
      const latency = flight === null ? null : performance.now() - flight.editedAt;
      if (reply.ok) setView({ explanation: reply.explanation, error: null, latency, busy: next !== null });
      else setView((previous) => ({ ...previous, error: reply.error, busy: next !== null }));
    };
    kick.current = (request, editedAt) => {
      if (inFlight.current === null) send(request, editedAt);
      else pending.current = { request, editedAt };
    };
    return () => {
      w.terminate();
      kick.current = null;
      inFlight.current = null;
      pending.current = null;
    };
  }, []);

  useEffect(() => {
    if (kick.current === null) return;
    seq.current += 1;
    kick.current({ seq: seq.current, state, query }, performance.now());
    setView((previous) => (previous.busy ? previous : { ...previous, busy: true }));
  }, [state, query]);

  return view;
}
