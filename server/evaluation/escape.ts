// Escaping for check-run output (DESIGN 3.2 rule 8, 3.6): control and format characters become visible `\u{XXXX}`, prose is
// Markdown-escaped, code-like values (paths, owners, logins, SHAs) are HTML-escaped inside <code>.
import type { Text } from "./decision.ts";

// Every character a reader cannot see, by Unicode property rather than a list (issue 16 item 6): controls (Cc: C0, DEL, C1),
// format characters (Cf: zero-width and direction marks, bidi embeddings/overrides/isolates, BOM, soft hyphen, U+061C,
// U+180E, U+2060-2064, U+FFF9-FFFB, tag characters), the line and paragraph separators (Zl, Zp), lone surrogates (Cs), and
// Default_Ignorable_Code_Point, which adds the invisible letters no general category catches (the Hangul fillers U+115F,
// U+1160, U+3164, U+FFA0 are Lo) and variation selectors. The `u` flag makes a surrogate pair one code point.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;

export function visible(value: string): string {
  return value.replace(INVISIBLE, (ch) => `\\u{${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}}`);
}

/**
 * JSON text from JSON.stringify with every invisible character written as a JSON `\uXXXX` escape (UTF-16 units), so it parses
 * back to the same value yet a terminal never receives a raw one. JSON.stringify already escapes the C0 controls inside strings
 * (not C1, bidi or separators), so a raw line feed left in its output is the indentation's line break and stays.
 */
export function visibleJson(json: string): string {
  return json.replace(INVISIBLE, (ch) => (ch === "\n" ? ch : Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).toUpperCase().padStart(4, "0")}`).join("")));
}

/** Backslash-escapes every ASCII punctuation character Markdown (and the forge's mentions and references) could act on. */
export function escapeMarkdown(value: string): string {
  return visible(value).replace(/[\\`*_{}[\]()#+\-.!|~<>&@:"']/g, "\\$&");
}

const HTML: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value: string): string {
  return visible(value).replace(/[&<>"']/g, (ch) => HTML[ch]!);
}

/**
 * A code-like value as inline HTML `<code>`. Markdown is still parsed between inline HTML tags, so Markdown punctuation is
 * backslash-escaped first (a path like `[x](y)` must not become a link, `@name` not a mention), then HTML-escaped.
 */
export function code(value: string): string {
  return `<code>${escapeHtml(visible(value).replace(/[\\`*_{}[\]()#+\-.!|~@:]/g, "\\$&"))}</code>`;
}

/** Renders message Text: prose escaped as Markdown, code-like parts as <code>. */
export function renderText(text: Text): string {
  return text.map((part) => (typeof part === "string" ? escapeMarkdown(part) : code(part.code))).join("");
}

/** Plain-text rendering for the title (not Markdown): only control characters are made visible. */
export function renderPlain(text: Text): string {
  return visible(text.map((part) => (typeof part === "string" ? part : part.code)).join(""));
}
