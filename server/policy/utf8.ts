// UTF-8 byte length without TextEncoder allocation (bounds are in bytes; the core must stay browser-safe and cheap on 3 MB).

export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The text of bytes that must be UTF-8, or null when they are not: the one strict decoding of the files the service judges
 * (the forge reader, server/forge/contents.ts) and of `service validate`, so both fail closed on the same bytes. The WHATWG
 * decoder with `fatal` rejects overlong forms, encoded surrogates and cut sequences; a leading byte order mark is dropped.
 */
export function decodeUtf8Strict(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
