// Test helpers: a client pointed at a simulator, a pino logger writing to a buffer, and a lookup plan like the decision core's.
import pino, { type Logger } from "pino";
import type { Scenario } from "../simulator/scenario.ts";
import type { ForgeSimulator } from "../simulator/simulator.ts";
import type { Evidence } from "../evaluation/evidence.ts";
import { createForgeClient, type ForgeClient } from "./client.ts";
import type { Governor } from "./governor.ts";
import type { LookupPlan } from "../evaluation/plan-lookups.ts";

export const CHECK_NAME = "Service / approval";

export function bufferLogger(): { logger: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const logger = pino({ level: "debug" }, { write: (s: string) => { chunks.push(s); } });
  return { logger, lines: () => chunks.join("").split("\n").filter(Boolean) };
}

export function clientFor(sim: ForgeSimulator, s: Scenario, options: { requestTimeoutMs?: number; logger?: Logger; governor?: Governor } = {}): ForgeClient {
  return createForgeClient({
    apiUrl: sim.url, appId: s.appId, privateKey: s.privateKey, requestTimeoutMs: options.requestTimeoutMs ?? 2000,
    checkName: CHECK_NAME, logger: options.logger ?? bufferLogger().logger, ...(options.governor ? { governor: options.governor } : {}),
  });
}

/** Owners named in the code-owners file, reviewers as team members, and the trusted App of the fixture. */
export function fixturePlan(evidence: Omit<Evidence, "directory">): LookupPlan {
  const file = Object.values(evidence.codeowners).find((f) => f?.kind === "found");
  const owners = file && file.kind === "found" ? [...file.text.matchAll(/@([\w.-]+(?:\/[\w.-]+)?)/g)].map((m) => m[1]!) : [];
  const reviewers = evidence.reviews.complete ? evidence.reviews.items.flatMap((r) => (r.user && r.user.type === "User" ? [r.user.login] : [])) : [];
  const users = [...new Set([...owners.filter((o) => !o.includes("/")), ...reviewers])];
  return {
    collaborators: users, organizationMemberships: users,
    teams: [...new Set(owners.filter((o) => o.includes("/")))].map((team) => ({ team, members: reviewers, info: true })),
    apps: ["docs-review-bot"], botUsers: ["docs-review-bot[bot]"],
  };
}
