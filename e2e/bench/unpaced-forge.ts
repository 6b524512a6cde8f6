/**
 * The simulator has no secondary rate limits: benchmarks of the service's own throughput lift the forge request governor's
 * budgets to the largest values the settings accept, so they measure the service, not the pacing (server/forge/governor.ts).
 */
export const UNPACED_FORGE = Object.freeze({
  SERVICE_FORGE_POINTS_PER_MINUTE: "1000000",
  SERVICE_FORGE_WRITES_PER_MINUTE: "100000",
  SERVICE_FORGE_CONCURRENT_REQUESTS: "100",
});
