import type { ForgeSimulator } from "../../server/simulator/simulator.ts";
import { signedDelivery } from "./payloads.ts";
import { WEBHOOK_SECRET } from "./service.ts";

/** The `checks_requested` delivery the simulator sent for a group, signed again as the forge sends a redelivery (same ID). */
export function deliveryFor(sim: ForgeSimulator, event: "merge_group", groupHead: string): { body: Uint8Array; headers: Record<string, string> } {
  const sent = sim.control.deliveries.find((d) => d.event === event && d.status === 202 && JSON.parse(d.body).merge_group?.head_sha === groupHead && JSON.parse(d.body).action === "checks_requested");
  if (sent === undefined) throw new Error(`no ${event} delivery for ${groupHead}`);
  return signedDelivery(WEBHOOK_SECRET, event, sent.id, sent.body);
}
