// The whole playground state in the URL fragment, so a link reproduces a scenario and nothing is sent anywhere (the fragment
// never leaves the browser). Format: `#v1.d.<base64url of deflate-raw(JSON)>` with the browser's CompressionStream, or
// `#v1.j.<base64url of JSON>` where compression is unavailable.
import { readState, type ReadResult } from "./read-state.ts";
import type { PlaygroundState } from "./state.ts";

const PREFIX = "v1.";

function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * Most bytes a link's state may hold once inflated (issue 16 item 7): deflate expands up to about 1,000 times, so a 1.8 MB
 * fragment could inflate to gigabytes and stall the tab. A real state is far smaller (a 3 MB CODEOWNERS, 3,000 paths).
 */
export const MAX_STATE_BYTES = 32 * 2 ** 20;
const TOO_LARGE = `the link holds more than ${MAX_STATE_BYTES / 2 ** 20} MiB of state`;

/** Compressed input is fed in slices this small, so one slice can never inflate past the limit by much before it is read. */
const INFLATE_SLICE_BYTES = 4096;

async function compress(bytes: Uint8Array): Promise<Uint8Array> {
  const output = new Blob([bytes as BlobPart]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(output).arrayBuffer());
}

/**
 * Inflates `bytes`, or returns null as soon as the output passes `limit`. The input is pulled slice by slice (a pull source
 * only enqueues when the stream wants more), because a DecompressionStream emits all the output of one input chunk at once.
 */
async function inflate(bytes: Uint8Array<ArrayBuffer>, limit: number): Promise<Uint8Array<ArrayBuffer> | null> {
  let offset = 0;
  const source = new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, (offset += INFLATE_SLICE_BYTES)));
    },
  });
  const reader = source.pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  const chunks: BlobPart[] = [];
  let total = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    total += read.value.byteLength;
    if (total > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(read.value);
  }
  return new Uint8Array(await new Blob(chunks).arrayBuffer());
}

const compressionAvailable = () => typeof CompressionStream === "function" && typeof DecompressionStream === "function";

export async function encodeState(state: PlaygroundState): Promise<string> {
  const json = new TextEncoder().encode(JSON.stringify(state));
  if (!compressionAvailable()) return `${PREFIX}j.${toBase64Url(json)}`;
  return `${PREFIX}d.${toBase64Url(await compress(json))}`;
}

/** Decodes a fragment (with or without the leading `#`). Anything damaged is refused with a reason, never half-applied. */
export async function decodeState(fragment: string): Promise<ReadResult> {
  const text = fragment.startsWith("#") ? fragment.slice(1) : fragment;
  if (!text.startsWith(PREFIX)) return { ok: false, error: "the link does not hold a playground state" };
  const kind = text.slice(PREFIX.length, PREFIX.length + 2);
  const payload = text.slice(PREFIX.length + 2);
  try {
    // base64 carries 3 bytes in 4 characters: an uncompressed payload past the limit is refused before it is decoded.
    if (kind === "j." && payload.length > (MAX_STATE_BYTES / 3) * 4) return { ok: false, error: TOO_LARGE };
    let bytes: Uint8Array<ArrayBuffer> | null = fromBase64Url(payload);
    if (kind === "d.") {
      if (!compressionAvailable()) return { ok: false, error: "this browser cannot decompress the link" };
      bytes = await inflate(bytes, MAX_STATE_BYTES);
      if (bytes === null) return { ok: false, error: TOO_LARGE };
    } else if (kind !== "j.") return { ok: false, error: "the link uses an unknown encoding" };
    return readState(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  } catch {
    return { ok: false, error: "the link is damaged" };
  }
}
