// A plain textarea with line numbers, errors shown beside their lines and one highlighted line. No editor framework: the
// gutter and the marks are positioned by line number, and only error lines and the highlight are rendered, so a 10,000-line
// file costs one string for the gutter.
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type UIEvent } from "react";

export const LINE_HEIGHT = 20;
const PADDING = 6;

export interface LineMark {
  readonly line: number;
  readonly message: string;
}

export function LineEditor(props: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  marks: readonly LineMark[];
  /** The line to show; `request` changes on every click, so the same line can be shown again after scrolling away. */
  highlight: { readonly line: number; readonly request: number } | null;
  rows?: number;
}) {
  const { value, marks, highlight } = props;
  const area = useRef<HTMLTextAreaElement>(null);
  const [scroll, setScroll] = useState({ top: 0, left: 0 });
  const lineCount = useMemo(() => {
    let count = 1;
    for (let i = value.indexOf("\n"); i >= 0; i = value.indexOf("\n", i + 1)) count++;
    return count;
  }, [value]);
  // Only the visible line numbers are rendered: a 10,000-line file must not lay out a 10,000-line gutter on each edit.
  const height = (props.rows ?? 14) * LINE_HEIGHT;
  const first = Math.floor(scroll.top / LINE_HEIGHT);
  const last = Math.min(lineCount, first + Math.ceil(height / LINE_HEIGHT) + 2);
  const gutter = useMemo(() => Array.from({ length: Math.max(0, last - first) }, (_, i) => first + i + 1).join("\n"), [first, last]);
  const errorLines = useMemo(() => new Set(marks.map((mark) => mark.line)), [marks]);

  // Uncontrolled on purpose: a controlled textarea makes React read back a 500 KB value on every keystroke. The DOM is
  // written only when the text changes from elsewhere (a scenario, an import, a link).
  const emitted = useRef(value);
  // React writes a changed defaultValue into the textarea's text content: give it the first value only.
  const [initial] = useState(value);
  useLayoutEffect(() => {
    const textarea = area.current;
    if (textarea !== null && value !== emitted.current) {
      emitted.current = value;
      textarea.value = value;
    }
  }, [value]);

  useEffect(() => {
    const textarea = area.current;
    if (highlight === null || textarea === null) return;
    const target = highlight.line;
    let start = 0;
    for (let line = 1; line < target && start >= 0; line++) start = value.indexOf("\n", start) + 1 || -1;
    if (start < 0) return;
    const end = value.indexOf("\n", start);
    textarea.focus({ preventScroll: true });
    textarea.setSelectionRange(start, end < 0 ? value.length : end);
    textarea.scrollTop = Math.max(0, (target - 1) * LINE_HEIGHT - textarea.clientHeight / 3);
    // Only when a new line is asked for; typing must not move the view.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [highlight?.request]);

  // The textarea element is created once: React never diffs its props again, so it never reads back (or rewrites) its
  // 500 KB of text on a re-render. Its handlers reach the current props through a ref.
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const textarea = useMemo(
    () => (
      <textarea
        id={props.id}
        ref={area}
        aria-label={props.label}
        spellCheck={false}
        wrap="off"
        autoCapitalize="off"
        autoComplete="off"
        defaultValue={initial}
        onInput={(event) => {
          emitted.current = event.currentTarget.value;
          onChange.current(emitted.current);
        }}
        onScroll={(event: UIEvent<HTMLTextAreaElement>) => setScroll({ top: event.currentTarget.scrollTop, left: event.currentTarget.scrollLeft })}
      />
    ),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [],
  );
  const shift = { transform: `translateY(${-scroll.top}px)` };
  const visibleMarks = marks.filter((mark) => Math.abs((mark.line - 1) * LINE_HEIGHT - scroll.top) < 2000);

  return (
    <div className="line-editor" style={{ height: height + 2 * PADDING }}>
      <div className="gutter" aria-hidden="true">
        <pre style={{ transform: `translateY(${first * LINE_HEIGHT - scroll.top}px)` }}>{gutter}</pre>
        <div className="gutter-marks" style={shift}>
          {[...errorLines].map((line) => (
            <div key={line} className="gutter-error" style={{ top: PADDING + (line - 1) * LINE_HEIGHT }} />
          ))}
        </div>
      </div>
      <div className="surface">
        <div className="marks" aria-hidden="true" style={shift}>
          {highlight !== null ? <div className="mark-highlight" style={{ top: PADDING + (highlight.line - 1) * LINE_HEIGHT }} /> : null}
          {visibleMarks.map((mark) => (
            <div key={`${mark.line}:${mark.message}`} className="mark-error" style={{ top: PADDING + (mark.line - 1) * LINE_HEIGHT }}>
              <span className="mark-message">{mark.message}</span>
            </div>
          ))}
        </div>
        {textarea}
      </div>
    </div>
  );
}
