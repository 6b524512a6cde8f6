// A stand-in evaluation thread for server/worker/evaluator.test.ts: a "decide" request never finishes (a busy loop, as an
// evaluation that runs away would), a "plan" request gets an empty plan at once.
import type { ThreadReply, ThreadRequest } from "./evaluator.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent<ThreadRequest>) => {
  const request = event.data;
  if (request.kind === "decide") for (;;);
  const reply: ThreadReply = { id: request.id, ok: true, kind: "plan", plan: { collaborators: [], organizationMemberships: [], teams: [], apps: [], botUsers: [] } };
  self.postMessage(reply);
};
