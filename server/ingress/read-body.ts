import type { BodyReservation } from "./body-budget.ts";

/**
 * Reads a request body as raw bytes while counting, and stops at limit + 1 byte: a larger body is refused without being held
 * in memory (spec: 413 "with or without Content-Length; enforced while streaming"). Every byte is covered by `reservation`
 * before it is read; when the process-wide budget cannot cover it the body is left unread ("busy").
 */
export type BodyRead = { kind: "ok"; bytes: Uint8Array } | { kind: "too_large" } | { kind: "failed" } | { kind: "busy" };

/** How far ahead of the bytes read so far a body without Content-Length reserves before each read. */
const STREAM_RESERVE_STEP = 64 * 1024;

export async function readBodyCapped(request: Request, declared: number | null, limit: number, reservation: BodyReservation): Promise<BodyRead> {
  if (declared !== null && declared <= limit) {
    if (!reservation.cover(declared)) return { kind: "busy" };
    // A declared length within the limit bounds the body by HTTP framing, so it is read whole in one native call (the
    // streaming reader below costs several times more per request under webhook load).
    try {
      return { kind: "ok", bytes: new Uint8Array(await request.arrayBuffer()) };
    } catch {
      return { kind: "failed" };
    }
  }
  const body = request.body;
  if (body === null) return { kind: "ok", bytes: new Uint8Array(0) };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      // A step is reserved before each read (never past the limit, so a maximal body fits the smallest budget); a chunk
      // larger than the step is covered once it is in hand, and refused with the body if the budget cannot cover it.
      if (!reservation.cover(Math.min(limit, total + STREAM_RESERVE_STEP))) return await cancelled(reader, { kind: "busy" });
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) return await cancelled(reader, { kind: "too_large" });
      if (!reservation.cover(total)) return await cancelled(reader, { kind: "busy" });
      chunks.push(value);
    }
  } catch {
    return { kind: "failed" };
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { kind: "ok", bytes };
}

async function cancelled(reader: ReadableStreamDefaultReader<Uint8Array>, read: BodyRead): Promise<BodyRead> {
  await reader.cancel().catch(() => {});
  return read;
}

/** A Content-Length header, when present, must be a plain decimal integer. */
export function parseContentLength(value: string | null): number | null | "invalid" {
  if (value === null) return null;
  if (!/^\d{1,15}$/.test(value.trim())) return "invalid";
  return Number(value.trim());
}
