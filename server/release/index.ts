// Public surface of the release adapter (spec/release-adapter.md). Nothing else in the service imports it.
export { ReleaseClient, MAX_RESPONSE_BYTES, API_VERSION, MEDIA_TYPE } from "./release-client.ts";
export type { DraftPlan, ReleaseClientOptions, ResolvedTag, UploadAsset } from "./release-client.ts";
export { AmbiguousMutationError, ControllerError } from "./errors.ts";
export type { FailureReason } from "./errors.ts";
export { MAX_JSON_DEPTH, MAX_JSON_ITEMS } from "./strict-json.ts";
export { UPLOAD_CHUNK_BYTES } from "./https-exchange.ts";
