// `service history export` (issue 28 item 3): every matching record as one line of JSON (JSON Lines), oldest first, read in
// batches (readHistoryBatch) and written as the output takes them, so memory stays bounded by one batch however many
// records there are, and a slow reader slows the export instead of growing a buffer.
import { visibleJson } from "../evaluation/escape.ts";
import type { HistoryRecord } from "./schema.ts";

/** Records read per batch: at most MAX_RECORD_BYTES each before compression, so a batch is bounded (typically ~2 MB). */
export const EXPORT_BATCH_RECORDS = 200;
/** Lines are handed to the output in chunks of about this many characters (fewer writes; still bounded). */
export const EXPORT_CHUNK_CHARS = 1024 * 1024;

/** Where the lines go: `write` resolves once the output has taken the chunk (or can take more), rejects once it is closed. */
export interface LineSink {
  write(chunk: string): Promise<void>;
}

/** The output was closed before the export ended (EPIPE: the reader went away). */
export class OutputClosed extends Error {
  override readonly name = "OutputClosed";
}

export type ReadBatch = (after: string | null) => Promise<{ readonly records: readonly HistoryRecord[]; readonly next: string | null }>;

/**
 * One record as its line: the record's JSON (it carries `schema_version`), ending with a newline. A line begins with
 * `schema_version`, `kind` and `id` (a decision's `confirmed` next), so a reader of the raw lines sees what each is first.
 * Written through visibleJson, as `history --json` is: DEL, C1 controls, U+2028/U+2029, zero-width, bidi controls and the
 * BOM (any control, format or default-ignorable character) become `\uXXXX`, so neither a terminal nor a line splitter
 * acts on a login, path or title; the line parses back to the same record.
 */
export function exportLine(record: HistoryRecord): string {
  const head = record.kind === "decision"
    ? { schema_version: record.schema_version, kind: record.kind, id: record.id, confirmed: record.confirmed }
    : { schema_version: record.schema_version, kind: record.kind, id: record.id };
  return `${visibleJson(JSON.stringify({ ...head, ...record }))}\n`;
}

/** Writes every record `readBatch` yields, batch after batch; resolves to how many were written. */
export async function exportHistory(readBatch: ReadBatch, sink: LineSink): Promise<number> {
  let after: string | null = null;
  let count = 0;
  let chunk = "";
  for (;;) {
    const batch = await readBatch(after);
    for (const record of batch.records) {
      chunk += exportLine(record);
      count += 1;
      if (chunk.length >= EXPORT_CHUNK_CHARS) {
        await sink.write(chunk);
        chunk = "";
      }
    }
    if (batch.next === null || batch.records.length === 0) break;
    after = batch.next;
  }
  if (chunk !== "") await sink.write(chunk);
  return count;
}

/** The minimum of a Node writable stream a sink needs (process.stdout). */
export interface WritableLike {
  write(chunk: string): boolean;
  once(event: "drain" | "error" | "close", listener: (error?: unknown) => void): unknown;
  on(event: "error", listener: (error: unknown) => void): unknown;
  off(event: "drain" | "error" | "close", listener: (...args: unknown[]) => void): unknown;
}

/**
 * A sink over a writable stream (process.stdout): waits for `drain` when the stream's buffer is full (backpressure), and
 * turns an error of the stream (EPIPE when the reader closed the pipe) into OutputClosed instead of an uncaught exception.
 */
export function streamSink(stream: WritableLike): LineSink {
  let closed: OutputClosed | null = null;
  stream.on("error", (error) => {
    closed ??= new OutputClosed(`the output was closed (${typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : "error"})`);
  });
  return {
    write(chunk) {
      if (closed !== null) return Promise.reject(closed);
      if (stream.write(chunk)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const settle = (drained: boolean) => {
          stream.off("drain", onDrain);
          stream.off("error", onEnd);
          stream.off("close", onEnd);
          if (drained && closed === null) resolve();
          else reject(closed ?? new OutputClosed("the output was closed"));
        };
        const onDrain = () => settle(true);
        const onEnd = () => settle(false);
        stream.once("drain", onDrain);
        stream.once("error", onEnd);
        stream.once("close", onEnd);
      });
    },
  };
}
