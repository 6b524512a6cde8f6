// Public surface of the forge client (DESIGN 2: the only code that sees forge API shapes).
export { createForgeClient, MAX_INSTALLATIONS, MAX_INSTALLATION_REPOSITORIES, type ForgeClient, type ForgeClientOptions, type ListResult } from "./client.ts";
export type { PagePosition, PageSink, StreamOutcome } from "./pagination.ts";
export { createIdentityProbe, systemClock, type IdentityProbe, type IdentityProbeOptions, type ProbeClock } from "./identity-probe.ts";
export { classifyForgeError, ForgeError, MAX_RATE_LIMIT_DELAY_MS, type ForgeErrorKind } from "./errors.ts";
export { type CheckConclusion, type CheckOutput, type CheckTarget, isCheckGone, type ManagedCheck } from "./check-runs.ts";
export type { EvidenceRequest, GatherOptions, GatherResult, LookupPlan, PlanLookups } from "./evidence.ts";
export type { OpenPullRequestSummary, PullRequestDetails, RepositoryInfo } from "./pull-requests.ts";
export { createGovernor, DEFAULT_GOVERNOR_SETTINGS, type Governor, type GovernorSettings, type Priority } from "./governor.ts";
export { INSTALLATION_PERMISSIONS, FORGE_API_VERSION, PER_PAGE, type CallOptions } from "./transport.ts";
export type { BlobRead, FileLocation } from "./contents.ts";
export { REPOSITORY_MEDIA_TYPE } from "./directory.ts";
export { convertAppManifest, type AppCredentials, type ManifestConversionOptions } from "./manifest.ts";
