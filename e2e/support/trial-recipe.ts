// The local setup rehearsal of docs/getting-started.md ("Rehearse the setup on one machine"), read from the document itself so
// that the spec that runs it (e2e/setup-trial.spec.ts) and the commands a reader copies cannot drift apart. Node-only APIs:
// Playwright runs specs under Node.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./setup-processes.ts";

export const TRIAL_DOC = join(ROOT, "docs", "getting-started.md");
/** The ports the document uses: the forge simulator's and the service's. */
export const DOC_PORTS = { forge: 3000, service: 8080 } as const;

export interface TrialRecipe {
  /** Shell text of each ```sh trial-<name>``` block. */
  readonly forge: string;
  readonly setup: string;
  readonly serve: string;
  readonly pullRequest: string;
  readonly approve: string;
  /** The address the reader opens, and the two buttons pressed, as the prose names them. */
  readonly setupPage: string;
  readonly buttons: readonly [string, string];
  /** Where the reader saves the App ID, the private key and the webhook secret. */
  readonly files: { readonly appId: string; readonly clientId: string; readonly privateKey: string; readonly webhookSecret: string; readonly clientSecret: string };
  readonly decisionsPage: string;
}

function section(text: string): string {
  const start = text.indexOf("\n## Rehearse the setup on one machine\n");
  if (start < 0) throw new Error("docs/getting-started.md has no section \"Rehearse the setup on one machine\"");
  const next = text.indexOf("\n## ", start + 1);
  return text.slice(start, next < 0 ? undefined : next);
}

function block(text: string, name: string): string {
  const found = new RegExp("```sh trial-" + name + "\\n([\\s\\S]*?)```").exec(text);
  if (!found) throw new Error(`no \`\`\`sh trial-${name} block`);
  return found[1]!;
}

function one(text: string, pattern: RegExp, what: string): RegExpExecArray {
  const found = pattern.exec(text);
  if (!found) throw new Error(`the rehearsal does not say ${what}`);
  return found;
}

export function readTrialRecipe(): TrialRecipe {
  const text = section(readFileSync(TRIAL_DOC, "utf8"));
  const buttons = one(text, /press "([^"]+)", then "([^"]+)"/, "which buttons to press");
  const files = one(text, /save the App ID as `([^`]+)` and the client ID as `([^`]+)`,\s+and the private key, webhook secret and client secret as `([^`]+)`, `([^`]+)` and\s+`([^`]+)`/, "where to save the credentials");
  return {
    forge: block(text, "forge"),
    setup: block(text, "setup"),
    serve: block(text, "serve"),
    pullRequest: block(text, "pull-request"),
    approve: block(text, "approve"),
    setupPage: one(text, /Open `(http:\/\/127\.0\.0\.1:\d+\/setup\?organization=[a-z]+)`/, "which page to open")[1]!,
    buttons: [buttons[1]!, buttons[2]!],
    files: { appId: files[1]!, clientId: files[2]!, privateKey: files[3]!, webhookSecret: files[4]!, clientSecret: files[5]! },
    decisionsPage: one(text, /`(http:\/\/127\.0\.0\.1:\d+\/decisions\/\?repository=[a-z/]+)`/, "where the decisions show")[1]!,
  };
}

/** `text` with the document's ports replaced by the ones a test run uses (another process may hold 3000 or 8080). */
export function withPorts(text: string, ports: { forge: number; service: number }): string {
  return text.replace(new RegExp(`\\b${DOC_PORTS.forge}\\b`, "g"), String(ports.forge)).replace(new RegExp(`\\b${DOC_PORTS.service}\\b`, "g"), String(ports.service));
}
