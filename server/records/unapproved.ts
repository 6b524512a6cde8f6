import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";

/**
 * A merge without a current confirmed `success` (DESIGN 3.10), reported once: by the acceptance of its `closed` delivery or
 * the reconciler's recovery that wrote its record (a redelivery writes none, so it reports nothing). Identifiers only in the
 * log; the metric has no label (repositories, actors and titles never become label values).
 */
export function reportUnapprovedMerge(
  deps: { readonly metrics: Pick<Metrics, "unapprovedMerges">; readonly log: Pick<Logger, "warn"> },
  merge: { readonly installationId: number; readonly repositoryId: number; readonly pullNumber: number | null; readonly headSha: string; readonly record: number; readonly recovered: boolean },
): void {
  deps.metrics.unapprovedMerges.inc();
  deps.log.warn(
    { installation_id: merge.installationId, repository_id: merge.repositoryId, pull_number: merge.pullNumber, head_sha: merge.headSha, merge_record: `m${merge.record}`, recovered: merge.recovered },
    "unapproved merge: merged without a current success from the service",
  );
}
