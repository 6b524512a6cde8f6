// What an evaluation thread answers to one request (server/worker/evaluation-thread.ts), kept apart from the thread's
// message wiring so that test stand-ins answer with the real core.
import { decideOnly, planLookups, previewCheck } from "../evaluation/index.ts";
import type { ThreadReply, ThreadRequest } from "./evaluator.ts";

export function answerThreadRequest(request: ThreadRequest): ThreadReply {
  try {
    if (request.kind === "plan") return { id: request.id, ok: true, kind: "plan", plan: planLookups(request.evidence, request.settings, request.known) };
    if (request.kind === "decide") return { id: request.id, ok: true, kind: "decide", ...decideOnly(request.evidence, request.settings) };
    return { id: request.id, ok: true, kind: "preview", output: previewCheck(request.evidence, request.settings, request.output).output };
  } catch (error) {
    // Only the error's class name crosses back: messages may quote evidence.
    return { id: request.id, ok: false, error: error instanceof Error ? error.name : "unknown" };
  }
}
