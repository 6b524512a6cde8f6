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

function fromBase64Url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

async function pipe(bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const output = new Blob([bytes as BlobPart]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(output).arrayBuffer());
}

const compressionAvailable = () => typeof CompressionStream === "function" && typeof DecompressionStream === "function";

export async function encodeState(state: PlaygroundState): Promise<string> {
  const json = new TextEncoder().encode(JSON.stringify(state));
  if (!compressionAvailable()) return `${PREFIX}j.${toBase64Url(json)}`;
  return `${PREFIX}d.${toBase64Url(await pipe(json, new CompressionStream("deflate-raw")))}`;
}

/** Decodes a fragment (with or without the leading `#`). Anything damaged is refused with a reason, never half-applied. */
export async function decodeState(fragment: string): Promise<ReadResult> {
  const text = fragment.startsWith("#") ? fragment.slice(1) : fragment;
  if (!text.startsWith(PREFIX)) return { ok: false, error: "the link does not hold a playground state" };
  const kind = text.slice(PREFIX.length, PREFIX.length + 2);
  const payload = text.slice(PREFIX.length + 2);
  try {
    let bytes = fromBase64Url(payload);
    if (kind === "d.") {
      if (!compressionAvailable()) return { ok: false, error: "this browser cannot decompress the link" };
      bytes = await pipe(bytes, new DecompressionStream("deflate-raw"));
    } else if (kind !== "j.") return { ok: false, error: "the link uses an unknown encoding" };
    return readState(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  } catch {
    return { ok: false, error: "the link is damaged" };
  }
}
