/**
 * Retry delays (spec "Queue rows"): ordinary runtime failures back off exponentially from 1 s, capped by
 * SERVICE_WORKER_RETRY_MAX_SECONDS, with jitter so a burst of failures does not retry in lockstep; attempts are never capped.
 * Forge rate limits use the provider's delay instead, bounded to one day.
 */
export const BASE_RETRY_MS = 1_000;
export const MAX_PROVIDER_DELAY_MS = 24 * 60 * 60 * 1000;

/** attempts: how many times the row has been claimed, this failure included (1 for the first failure). */
export function retryDelayMs(attempts: number, capSeconds: number, random: () => number = Math.random): number {
  const cap = capSeconds * 1000;
  const exponential = Math.min(cap, BASE_RETRY_MS * 2 ** Math.min(Math.max(attempts - 1, 0), 30));
  // Jitter in [50%, 100%] of the exponential step: never longer than the cap, never a zero delay.
  return Math.max(1, Math.round(exponential * (0.5 + random() / 2)));
}

export function providerDelayMs(retryAfterMs: number | null | undefined): number {
  const delay = retryAfterMs ?? 60_000;
  return Math.min(Math.max(delay, 1_000), MAX_PROVIDER_DELAY_MS);
}
