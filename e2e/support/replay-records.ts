import { pino } from "pino";
import { blobReader } from "../../server/commands/history.ts";
import type { DatabaseTarget } from "../../server/config/index.ts";
import { DEFAULT_EVALUATION_SETTINGS, type EvaluationSettings } from "../../server/evaluation/evidence.ts";
import { createForgeClient } from "../../server/forge/index.ts";
import { replayRecord } from "../../server/records/replay.ts";
import type { ForgeSimulator } from "../../server/simulator/simulator.ts";
import type { Scenario } from "../../server/simulator/scenario.ts";
import { MAX_HISTORY_BATCH, openStore, readHistoryBatch } from "../../server/store/index.ts";

/**
 * Issue 28 item 4, "a test replays every record written by the end-to-end suites and requires 100 % agreement": the harnesses
 * that run the worker against the forge simulator (e2e/support/service.ts, forge-rig.ts) call this when a suite stops, before
 * the simulator goes: every decision record in the suite's database is replayed as `service history replay` does (the
 * recorded files read again from the simulator's blob route with the App's installation token, today's evaluate(), today's
 * record compared with the stored one). A record that differs or cannot be replayed fails the suite that wrote it.
 */
export type ReplayReport = { readonly replayed: number; readonly failures: readonly string[] };

export async function replayEveryRecord(target: DatabaseTarget, sim: ForgeSimulator, scenario: Scenario, settings: EvaluationSettings = DEFAULT_EVALUATION_SETTINGS): Promise<ReplayReport> {
  // A fault a suite left on the simulator's routes is no fault of the record.
  sim.faults.clear();
  const forge = createForgeClient({ apiUrl: sim.url, appId: scenario.appId, privateKey: scenario.privateKey, requestTimeoutMs: 5_000, checkName: settings.checkName, logger: pino({ level: "silent" }) });
  const store = openStore(target);
  const failures: string[] = [];
  let replayed = 0;
  try {
    let after: string | null = null;
    for (;;) {
      const batch = await store.execute(() => readHistoryBatch({ kind: "decision" }, after, MAX_HISTORY_BATCH));
      for (const record of batch.records) {
        if (record.kind !== "decision") continue;
        replayed += 1;
        const outcome = await replayRecord(record, settings, blobReader(forge, record.installation_id));
        const where = `${record.id} (${record.repository.full_name}#${record.pull_request} at ${record.head_sha.slice(0, 8)}, ${record.conclusion})`;
        if (outcome.kind === "different") failures.push(`${where} differs: ${outcome.differences.join("; ")}`);
        else if (outcome.kind === "cannot_replay") failures.push(`${where} cannot be replayed: ${outcome.why}`);
      }
      if (batch.next === null) break;
      after = batch.next;
    }
  } finally {
    await store.close();
  }
  return { replayed, failures };
}

/** Fails when a record did not replay to itself; the message lists each (the suite's harness calls it while stopping). */
export function assertReplayAgreement(report: ReplayReport): void {
  if (report.failures.length > 0) {
    throw new Error(`decision record replay: ${report.failures.length} of ${report.replayed} records do not replay to themselves:\n  ${report.failures.join("\n  ")}`);
  }
}
