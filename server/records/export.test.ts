import { describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { baseEvidence, withFiles } from "../evaluation/evidence-fixture.ts";
import { EXPORT_CHUNK_CHARS, exportHistory, exportLine, OutputClosed, type ReadBatch, streamSink } from "./export.ts";
import { mergeFixture, recordFixture } from "./record-fixture.ts";
import type { HistoryRecord } from "./schema.ts";

const decision = (id: number): HistoryRecord => recordFixture(withFiles(baseEvidence(), ["src/app.ts"]), { id }).record;

/** Batches of `size` over `records`, with a cursor that is the index reached; logs each read. */
function batches(records: readonly HistoryRecord[], size: number, log: string[] = []): ReadBatch {
  return async (after) => {
    const from = after === null ? 0 : Number(after);
    log.push(`read ${from}`);
    const slice = records.slice(from, from + size);
    return { records: slice, next: from + size < records.length ? String(from + size) : null };
  };
}

describe("history export", () => {
  test("every record becomes one line of its JSON, in the order read, batch after batch", async () => {
    const records = [decision(1), mergeFixture(null, { id: "m2" }), decision(3), decision(4), decision(5)];
    const chunks: string[] = [];
    const count = await exportHistory(batches(records, 2), { write: async (chunk) => void chunks.push(chunk) });
    expect(count).toBe(5);
    const lines = chunks.join("").split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((line) => JSON.parse(line))).toEqual(records.map((r) => JSON.parse(JSON.stringify(r))));
    expect(lines.every((line) => JSON.parse(line).schema_version === 1)).toBe(true);
    expect(exportLine(records[1]!)).not.toContain("\n\n");
  });

  test("a line begins with what the record is: schema_version, kind, id (and a decision's confirmation)", () => {
    expect(exportLine(decision(7))).toStartWith('{"schema_version":1,"kind":"decision","id":"d7","confirmed":true,"installation_id":');
    expect(exportLine(mergeFixture(null, { id: "m3" }))).toStartWith('{"schema_version":1,"kind":"merge","id":"m3","installation_id":');
  });

  test("a line carries no raw character a terminal or a line splitter acts on: C1 controls, DEL, separators, zero-width and bidi controls, BOM are \\uXXXX", async () => {
    const hostile = [0x7f, 0x80, 0x85, 0x9b, 0x9f, 0x2028, 0x2029, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff];
    const login = `mallory${hostile.map((code) => String.fromCharCode(code)).join("")}\u001b[31m`;
    const record = mergeFixture(null, { id: "m9", merged_by: { id: 5, login } });
    const chunks: string[] = [];
    await exportHistory(batches([record], 1), { write: async (chunk) => void chunks.push(chunk) });
    const line = chunks.join("");
    for (const code of hostile) {
      const hex = code.toString(16).toUpperCase().padStart(4, "0");
      expect({ hex, raw: line.includes(String.fromCharCode(code)) }).toEqual({ hex, raw: false });
      expect(line.toUpperCase()).toContain(`\\U${hex}`);
    }
    expect(line.split("\n")).toHaveLength(2); // one line and the empty rest after its newline
    expect(JSON.parse(line)).toEqual(JSON.parse(JSON.stringify(record)));
    expect(exportLine(record)).toBe(line);
  });

  test("no matching record writes nothing", async () => {
    const chunks: string[] = [];
    expect(await exportHistory(batches([], 2), { write: async (chunk) => void chunks.push(chunk) })).toBe(0);
    expect(chunks).toEqual([]);
  });

  test("the next batch is not read before the output has taken the lines before it (constant memory under a slow reader)", async () => {
    const big = decision(1);
    const perChunk = Math.ceil(EXPORT_CHUNK_CHARS / exportLine(big).length);
    const records = Array.from({ length: perChunk * 3 }, (_, i) => ({ ...big, id: `d${i + 1}` }) as HistoryRecord);
    const log: string[] = [];
    let release: () => void = () => {};
    const sink = { write: (chunk: string) => { log.push(`write ${chunk.length >= EXPORT_CHUNK_CHARS ? "full" : "rest"}`); return new Promise<void>((resolve) => { release = resolve; }); } };
    const done = exportHistory(batches(records, perChunk, log), sink);
    await Bun.sleep(20);
    // The first chunk is waiting for the output: nothing more is read meanwhile.
    expect(log).toEqual(["read 0", "write full"]);
    release();
    await Bun.sleep(20);
    expect(log).toEqual(["read 0", "write full", `read ${perChunk}`, "write full"]);
    for (let i = 0; i < 5; i++) { release(); await Bun.sleep(5); }
    expect(await done).toBe(records.length);
  });

  test("a stream sink waits for drain when the stream's buffer is full", async () => {
    const taken: string[] = [];
    let pending: (() => void) | null = null;
    const stream = new Writable({ highWaterMark: 16, write(chunk, _enc, callback) { taken.push(String(chunk)); pending = callback; } });
    const sink = streamSink(stream);
    let written = false;
    const first = sink.write("x".repeat(64)).then(() => { written = true; });
    await Bun.sleep(10);
    expect(written).toBe(false);
    (pending as unknown as () => void)();
    await first;
    expect(written).toBe(true);
  });

  test("a closed output (EPIPE) ends the export with OutputClosed, not an uncaught error", async () => {
    const stream = new Writable({ highWaterMark: 16, write(_chunk, _enc, callback) { callback(Object.assign(new Error("write EPIPE"), { code: "EPIPE" })); } });
    const sink = streamSink(stream);
    const records = Array.from({ length: 2 * Math.ceil(EXPORT_CHUNK_CHARS / exportLine(decision(1)).length) }, (_, i) => ({ ...decision(1), id: `d${i + 1}` }) as HistoryRecord);
    const error = await exportHistory(batches(records, 100), sink).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutputClosed);
    expect((error as Error).message).toContain("EPIPE");
  });
});
