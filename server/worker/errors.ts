/** A job that must run again later: transient evidence gaps, unreachable forge, a guard not granted in time. */
export class RetryLater extends Error {
  override readonly name = "RetryLater";
  constructor(
    /** A fixed code stored in the row's last_error and logged: never a payload or URL. */
    readonly code: string,
    /** Provider-supplied delay (rate limits), bounded later to one day; null for ordinary backoff. */
    readonly providerDelayMs: number | null = null,
  ) {
    super(code);
  }
}

/**
 * The claim no longer holds its row's lease (a renewal was refused, the lease lapsed while the work stalled, or the fences were
 * read without it): the work stops, nothing is completed or retried by this claim, and the next claim runs the row again.
 */
export class LeaseLost extends Error {
  override readonly name = "LeaseLost";
  constructor() {
    super("lease lost");
  }
}
