export { type BodyBudget, type BodyReservation, createBodyBudget } from "./body-budget.ts";
export { EVENT_LABELS, ACTION_LABELS, type Mapping, type MappingContext, mapEvent, metricLabels } from "./event-mapping.ts";
export {
  type CheckMemory, checkDigest, checkHandle, createCheck, ensureRememberedCheckInProgress, type HeadCheckTarget, rememberCheck, rememberedCheck, resetCheck, writeCheck, writeUnlessGone,
} from "./check-memory.ts";
export { type FastPathDeps, IN_PROGRESS_OUTPUT, runFastPath } from "./fast-path.ts";
export { PULL_HANDOFF_MAX_AGE_MS, PullHandoff } from "./pull-handoff.ts";
export { type FailureReason, handleWebhook, type WebhookDeps, type WebhookReply } from "./handle-webhook.ts";
export { HEAD_SHA, MAX_WEBHOOK_BODY_BYTES, MAX_WEBHOOK_HEADER_LENGTH } from "./limits.ts";
export { verifySignature } from "./verify-signature.ts";
