// HTML responses of the setup routes: escaping, one layout, and the headers every setup response carries (issue 11, item 5):
// no-store, no referrer, an explicit content type, X-Frame-Options DENY, nosniff, and a content security policy with no inline
// script or style except the exact blocks below, allowed by their SHA-256 hashes.
import { createHash } from "node:crypto";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f8fa}
main{max-width:52rem;margin:2rem auto;padding:1.5rem 2rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}
h1{font-size:1.5rem;margin-top:0}h2{font-size:1.15rem;margin-top:1.75rem}
pre,code{font:13px/1.45 ui-monospace,monospace}pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.75rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse}th,td{text-align:left;padding:.25rem 1rem .25rem 0;vertical-align:top}
button,.button{font:inherit;padding:.4rem .9rem;border:1px solid #1f883d;border-radius:6px;background:#1f883d;color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
.secondary{background:#fff;color:#1f883d}.controls{display:flex;gap:.5rem;align-items:center;margin:.25rem 0 1rem}
.warning{border-left:4px solid #bf8700;background:#fff8c5;padding:.5rem 1rem}.error{border-left:4px solid #cf222e;background:#ffebe9;padding:.5rem 1rem}
.status{color:#1a7f37;font-size:.9rem}
`;

/** Copy controls of the callback page: copies the text of the element named by data-copy. No inline handlers (CSP). */
export const COPY_SCRIPT = `
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  button.addEventListener("click", function () {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-copy") + "-status");
    navigator.clipboard.writeText(source.textContent).then(function () { status.textContent = "Copied"; },
      function () { status.textContent = "Copy failed: select the text and copy it by hand"; });
  });
});
`;

const hash = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
export const STYLE_HASH = hash(STYLE);
export const COPY_SCRIPT_HASH = hash(COPY_SCRIPT);

/** The policy of a setup page: nothing but our hashed style, optionally our hashed script, and form posts to `formAction`. */
export function contentSecurityPolicy(options: { script?: boolean; formAction?: string } = {}): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    `script-src ${options.script ? COPY_SCRIPT_HASH : "'none'"}`,
    "img-src 'none'",
    "connect-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    `form-action ${options.formAction ?? "'none'"}`,
    "frame-ancestors 'none'",
  ].join("; ");
}

export function setupHeaders(csp: string, contentType = "text/html; charset=utf-8"): Record<string, string> {
  return {
    "content-type": contentType,
    "cache-control": "no-store, max-age=0",
    pragma: "no-cache",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "content-security-policy": csp,
  };
}

export function page(title: string, body: string, options: { script?: boolean } = {}): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
${options.script ? `<script>${COPY_SCRIPT}</script>` : ""}
</body>
</html>
`;
}

export function htmlResponse(status: number, html: string, csp: string): Response {
  return new Response(html, { status, headers: setupHeaders(csp) });
}
