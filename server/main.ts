#!/usr/bin/env bun
import { describeConfig } from "./config/index.ts";
import { APPLICATION_VERSION } from "./build-info.ts";
import { databaseCheck, databaseMigrate } from "./commands/database.ts";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./commands/exit-codes.ts";
import { commandUsage, helpRequest, overallUsage } from "./commands/help.ts";
import { loadOrReport, loggerFor } from "./commands/load.ts";
import { runDemo } from "./commands/demo.ts";
import { runExplain } from "./commands/explain.ts";
import { runHistory, runHistoryExport, runHistoryReplay, runHistoryVerify } from "./commands/history.ts";
import { runValidate } from "./commands/validate.ts";
import { startService } from "./commands/serve.ts";

/** Composition root and CLI. Commands live in server/commands; nothing here has logic of its own. */
const USAGE = overallUsage();

const out = { stdout: (line: string) => console.log(line), stderr: (line: string) => console.error(line) };

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (command === "--version" || command === "version") {
    out.stdout(APPLICATION_VERSION);
    return EXIT_OK;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    out.stdout(USAGE);
    return EXIT_OK;
  }
  if (argv.includes("--help") || argv.includes("-h")) {
    const help = helpRequest(argv);
    out.stdout(help === null ? USAGE : commandUsage(help));
    return EXIT_OK;
  }
  if (command === "demo") return runDemo(argv.slice(1), process.env, out);
  if (command === "validate") return runValidate(argv.slice(1), out);
  if (command === "explain") {
    const config = loadOrReport(process.env, out.stderr);
    return config === null ? EXIT_USAGE : runExplain(argv.slice(1), config, out);
  }
  if (command === "history") {
    // The records need only the database settings; replay also reads the forge with the App's credentials.
    const config = loadOrReport(process.env, out.stderr, sub === "replay" ? "service" : "database");
    if (config === null) return EXIT_USAGE;
    if (sub === "export") return runHistoryExport(argv.slice(2), config, out);
    if (sub === "replay") return runHistoryReplay(argv.slice(2), config, out);
    if (sub === "verify") return runHistoryVerify(argv.slice(2), config, out);
    return runHistory(argv.slice(1), config, out);
  }
  if (command === undefined || rest.length > 0) {
    out.stderr(USAGE);
    return EXIT_USAGE;
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
