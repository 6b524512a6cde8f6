import type { ForgeClient, Priority } from "../forge/index.ts";
import type { EvaluationSettings } from "../evaluation/index.ts";
import type { Logger } from "../observability/logger.ts";
import type { PullHandoff } from "../ingress/pull-handoff.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { JobRow, RepositoryRef, Store } from "../store/index.ts";
import type { Evaluator } from "./evaluator.ts";

/** What every job handler gets: the store, the forge client, settings, metrics, a clock and the job's abort signal. */
export type WorkerContext = {
  readonly store: Store;
  readonly forge: ForgeClient;
  readonly settings: EvaluationSettings & { readonly organizationPolicyRepository: string };
  /** Runs the decision core: `serve` passes evaluation threads; without one it runs on the event loop (tests). */
  readonly evaluator?: Evaluator;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly now: () => number;
  readonly workerId: string;
  /** Bound on waiting for the publication guards and on a shielded reset. */
  readonly guardTimeoutMs: number;
  /** Bound on the fan-out's best-effort check resets. */
  readonly resetTimeoutMs: number;
  /** The fast path's reads of pull requests, handed to the evaluations their deliveries queued (server/ingress/pull-handoff.ts). */
  readonly pullHandoff?: PullHandoff;
  /** Called with each published or reset check transition (the demo prints them). */
  readonly onTransition?: (event: CheckTransition) => void;
};

export type CheckTransition = {
  readonly pullNumber: number | null;
  readonly headSha: string;
  readonly status: "in_progress" | "completed";
  readonly conclusion: "success" | "failure" | null;
  readonly title: string;
};

export type JobOutcome = { readonly kind: "done"; readonly note: string };

/**
 * The forge request priority of a row's reads (server/forge/governor.ts): background when only a reconciler scan or a fan-out
 * asked for it. Writes under the publication guards stay interactive whatever the row: authority acceptance waits for that guard.
 */
export function priorityOf(row: JobRow): Priority {
  return row.background === 1 ? "background" : "interactive";
}

export function repositoryOf(row: JobRow): RepositoryRef {
  if (row.repository_id === null || row.repository_owner === null || row.repository_name === null) throw new Error(`job ${row.id} has no repository`);
  return { installationId: row.installation_id, repositoryId: row.repository_id, owner: row.repository_owner, name: row.repository_name };
}

/** The lease token of the claim that handed the row to its handler (claimNext returns it as the owner). */
export function leaseOf(row: JobRow): string {
  if (row.lease_owner === null) throw new Error(`job ${row.id} is not leased`);
  return row.lease_owner;
}
