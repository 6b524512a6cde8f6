// A stand-in evaluation thread for server/worker/evaluator.test.ts: "plan" and "decide" are answered by the real decision
// core; a "preview" request of pull request 1 never finishes (a busy loop, as a preview that runs away would), any other
// preview request fails as a defect in the preview would.
import { answerThreadRequest } from "./thread-answer.ts";
import type { ThreadReply, ThreadRequest } from "./evaluator.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent<ThreadRequest>) => {
  const request = event.data;
  if (request.kind === "preview" && request.evidence.pullRequest.number === 1) for (;;);
  const reply: ThreadReply = request.kind === "preview" ? { id: request.id, ok: false, error: "TypeError" } : answerThreadRequest(request);
  self.postMessage(reply);
};
