// The evaluation thread (issue 16 item 2): the pure decision core (planLookups, the decision, the change preview) run off
// the service's event loop, so a large or adversarial decision never stalls ingress, health probes or lease renewal. Requests
// and replies are plain data (structured clone); one request at a time. `bun build --compile` bundles this file as an extra
// entry point (scripts/build.ts; its URL is resolved in server/threads.ts).
import type { ThreadRequest } from "./evaluator.ts";
import { answerThreadRequest } from "./thread-answer.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent<ThreadRequest>) => {
  self.postMessage(answerThreadRequest(event.data));
};
