import { describe, expect, test } from "bun:test";
import { BASE_RETRY_MS, MAX_PROVIDER_DELAY_MS, providerDelayMs, retryDelayMs } from "./backoff.ts";

describe("retry delays", () => {
  test("ordinary failures back off exponentially from one second", () => {
    const top = () => 0.999999;
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 300, top))).toEqual([1000, 2000, 4000, 8000]);
  });
  test("the delay never exceeds SERVICE_WORKER_RETRY_MAX_SECONDS however many attempts, and attempts are never capped", () => {
    for (const attempts of [10, 20, 1000, 1_000_000]) expect(retryDelayMs(attempts, 300, () => 0.999999)).toBe(300_000);
  });
  test("jitter keeps each delay between half and all of its step", () => {
    for (let i = 0; i < 200; i++) {
      const delay = retryDelayMs(3, 300);
      expect(delay).toBeGreaterThanOrEqual(2000);
      expect(delay).toBeLessThanOrEqual(4000);
    }
    expect(retryDelayMs(1, 300, () => 0)).toBe(BASE_RETRY_MS / 2);
  });
  test("a provider's rate-limit delay is used as given but bounded to one day", () => {
    expect(providerDelayMs(45_000)).toBe(45_000);
    expect(providerDelayMs(10 * MAX_PROVIDER_DELAY_MS)).toBe(MAX_PROVIDER_DELAY_MS);
    expect(providerDelayMs(null)).toBe(60_000);
  });
});
