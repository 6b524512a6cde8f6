#!/usr/bin/env bun
import { describeConfig } from "./config/index.ts";
import { APPLICATION_VERSION } from "./build-info.ts";
import { databaseCheck, databaseMigrate } from "./commands/database.ts";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./commands/exit-codes.ts";
import { loadOrReport, loggerFor } from "./commands/load.ts";
import { runDemo } from "./commands/demo.ts";
import { runExplain } from "./commands/explain.ts";
import { runValidate } from "./commands/validate.ts";
import { startService } from "./commands/serve.ts";

/** Composition root and CLI. Commands live in server/commands; nothing here has logic of its own. */
const USAGE = `usage: service <command>

commands:
  serve              run the service (HTTP routes and background tasks)
  database migrate   apply the embedded migrations (the only command that changes schema)
  database check     exit 0 only if the database is at this binary's migration head and release contract
  config check       load and validate the configuration (reading secret files), print the effective non-secret settings
  explain --repository OWNER/NAME --pull N [--json] [--installation ID]
                     gather the evidence the worker would (configured App credentials) and print the decision, or with
                     --json an evidence document for the playground (no token, key or secret in it)
  validate [DIR] [--files-from FILE|-] [--format text|json|github] [--policy FILE] [--organization-policy FILE] [--strict]
                     check the CODEOWNERS and policy files the service would read in DIR, offline (no settings, database
                     or forge): exit 0 no error, 1 errors (with --strict also warnings), 2 usage
  demo [--once]      run the service on a fresh embedded database against the built-in forge simulator and walk one pull
                     request through fail → approve → success → new commit → fail → approve → success
  --version          print the application version

Configuration comes from SERVICE_* environment variables; secrets from files (see README.md).`;

const out = { stdout: (line: string) => console.log(line), stderr: (line: string) => console.error(line) };

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (command === "--version" || command === "version") {
    out.stdout(APPLICATION_VERSION);
    return EXIT_OK;
  }
  if (command === "demo") return runDemo(argv.slice(1), process.env, out);
  if (command === "validate") return runValidate(argv.slice(1), out);
  if (command === "explain") {
    const config = loadOrReport(process.env, out.stderr);
    return config === null ? EXIT_USAGE : runExplain(argv.slice(1), config, out);
  }
  if (command === undefined || command === "--help" || command === "help" || rest.length > 0) {
    (command === undefined || rest.length > 0 ? out.stderr : out.stdout)(USAGE);
    return command === undefined || rest.length > 0 ? EXIT_USAGE : EXIT_OK;
  }
  const known = (command === "serve" && sub === undefined) || (command === "database" && (sub === "migrate" || sub === "check")) || (command === "config" && sub === "check");
  if (!known) {
    out.stderr(`unknown command: ${[command, sub].filter(Boolean).join(" ")}\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  // database migrate/check need only the database settings: a migration job does not mount the App's secrets.
  const config = loadOrReport(process.env, out.stderr, command === "database" ? "database" : "service");
  if (config === null) return EXIT_USAGE;

  if (command === "config") {
    out.stdout(JSON.stringify(describeConfig(config), null, 2));
    return EXIT_OK;
  }
  if (command === "database") return sub === "migrate" ? databaseMigrate(config, out) : databaseCheck(config, out);

  const log = loggerFor(config);
  let service;
  try {
    service = await startService(config, log);
  } catch (error) {
    log.fatal({ reason: (error as Error).message }, "cannot start");
    return EXIT_FAILURE;
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, "shutting down");
      const deadline = setTimeout(() => resolve(EXIT_FAILURE), 9_000);
      service.stop().then(
        () => {
          clearTimeout(deadline);
          resolve(EXIT_OK);
        },
        () => resolve(EXIT_FAILURE),
      );
    };
    process.on("SIGTERM", () => shutdown("SIGTERM"));
    process.on("SIGINT", () => shutdown("SIGINT"));
  });
}

process.exit(await main(process.argv.slice(2)));
