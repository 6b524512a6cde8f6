// The evaluation thread (issue 16 item 2): the pure decision core (planLookups, decideCheck) run off the service's
// event loop, so a large or adversarial decision never stalls ingress, health probes or lease renewal. Requests and replies
// are plain data (structured clone); one request at a time. `bun build --compile` bundles this file as an extra entry point
// (scripts/build.ts; its URL is resolved in server/threads.ts).
import { decideCheck, planLookups } from "../evaluation/index.ts";
import type { ThreadReply, ThreadRequest } from "./evaluator.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent<ThreadRequest>) => {
  const request = event.data;
  let reply: ThreadReply;
  try {
    if (request.kind === "plan") reply = { id: request.id, ok: true, kind: "plan", plan: planLookups(request.evidence, request.settings, request.known) };
    else {
      const { decision, output } = decideCheck(request.evidence, request.settings);
      reply = { id: request.id, ok: true, kind: "decide", decision, output };
    }
  } catch (error) {
    // Only the error's class name crosses back: messages may quote evidence.
    reply = { id: request.id, ok: false, error: error instanceof Error ? error.name : "unknown" };
  }
  self.postMessage(reply);
};
