// Renders the check output's Markdown as the forge would show it, for the subset renderCheck() writes: `###` headings,
// `**bold**` lines, `> ` quotes (a break-glass reason), `- ` and `  - ` lists, `_italic_`, backslash escapes and `<code>` with HTML-escaped content. Builds React
// elements (never innerHTML), so nothing in the evidence can inject markup into the page.
import { memo, type ReactNode } from "react";

const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'" };
const unescapeHtml = (text: string) => text.replace(/&(amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity]!);

function inline(text: string, key: string): ReactNode[] {
  const nodes: ReactNode[] = [];
  const parts = text.split(/(<code>[\s\S]*?<\/code>)/);
  parts.forEach((part, index) => {
    if (part.startsWith("<code>") && part.endsWith("</code>")) {
      // Between inline HTML tags Markdown still applies backslash escapes (renderCheck escapes code-like values for it).
      nodes.push(<code key={`${key}c${index}`}>{unescapeHtml(part.slice(6, -7).replace(/\\([!-/:-@[-`{-~])/g, "$1"))}</code>);
      return;
    }
    // Emphasis markers are only those not escaped with a backslash.
    const tokens = part.split(/((?<!\\)\*\*|(?<!\\)_)/);
    let bold = false;
    let italic = false;
    tokens.forEach((token, t) => {
      if (token === "**") bold = !bold;
      else if (token === "_") italic = !italic;
      else if (token !== "" && token !== undefined) {
        const plain = token.replace(/\\([\s\S])/g, "$1");
        const element = bold ? <strong key={`${key}b${index}.${t}`}>{plain}</strong> : italic ? <em key={`${key}i${index}.${t}`}>{plain}</em> : plain;
        nodes.push(element);
      }
    });
  });
  return nodes;
}

export const Markdown = memo(function Markdown({ source }: { source: string }) {
  const blocks: ReactNode[] = [];
  let list: { item: ReactNode[]; children: ReactNode[] }[] | null = null;
  const flush = (key: string) => {
    if (list === null) return;
    blocks.push(
      <ul key={key}>
        {list.map((entry, index) => (
          <li key={index}>
            {entry.item}
            {entry.children.length > 0 ? <ul>{entry.children}</ul> : null}
          </li>
        ))}
      </ul>,
    );
    list = null;
  };
  source.split("\n").forEach((line, index) => {
    const key = `l${index}`;
    if (line.startsWith("  - ") && list !== null && list.length > 0) {
      list[list.length - 1]!.children.push(<li key={key}>{inline(line.slice(4), key)}</li>);
      return;
    }
    if (line.startsWith("- ")) {
      list ??= [];
      list.push({ item: inline(line.slice(2), key), children: [] });
      return;
    }
    flush(`u${index}`);
    if (line.trim() === "") return;
    if (line.startsWith("### ")) blocks.push(<h4 key={key}>{inline(line.slice(4), key)}</h4>);
    else if (line.startsWith("> ")) blocks.push(<blockquote key={key}>{inline(line.slice(2), key)}</blockquote>);
    else blocks.push(<p key={key}>{inline(line, key)}</p>);
  });
  flush("end");
  return <div className="markdown">{blocks}</div>;
});
