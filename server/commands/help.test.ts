import { expect, test } from "bun:test";
import { commandUsage, helpRequest } from "./help.ts";

test("a subcommand's --help names the subcommand, not its parent taking arguments", () => {
  expect(helpRequest(["history", "export", "--help"])?.name).toEqual(["history", "export"]);
  expect(helpRequest(["history", "replay", "d1", "--help"])?.name).toEqual(["history", "replay"]);
  expect(helpRequest(["history", "--help"])?.name).toEqual(["history"]);
  expect(helpRequest(["history", "--repository", "acme/web", "--help"])?.name).toEqual(["history"]);
  expect(commandUsage(helpRequest(["history", "export", "-h"])!)).toStartWith("usage: service history export");
  expect(helpRequest(["database", "--help"])).toBeNull();
});
