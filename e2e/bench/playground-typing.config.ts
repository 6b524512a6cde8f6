import { defineConfig } from "@playwright/test";
import base from "../playwright.config.ts";

/** The typing benchmark's Playwright run (e2e/bench/playground-typing-bench.ts): the suite's browser and server, its own spec. */
export default defineConfig({ ...base, testDir: ".", testMatch: "playground-typing.pw.ts", reporter: [["line"]] });
