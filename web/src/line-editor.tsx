// A plain textarea with line numbers, errors shown beside their lines and one highlighted line. No editor framework: the
// gutter and the marks are positioned by line number, and only error lines and the highlight are rendered, so a 10,000-line
// file costs one string for the gutter.
import { useEffect, useMemo, useRef, useState, type UIEvent } from "react";

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
  highlight: number | null;
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
  const gutter = useMemo(() => Array.from({ length: lineCount }, (_, i) => i + 1).join("\n"), [lineCount]);
  const errorLines = useMemo(() => new Set(marks.map((mark) => mark.line)), [marks]);

  useEffect(() => {
    const textarea = area.current;
    if (highlight === null || textarea === null) return;
    let start = 0;
    for (let line = 1; line < highlight && start >= 0; line++) start = value.indexOf("\n", start) + 1 || -1;
    if (start < 0) return;
    const end = value.indexOf("\n", start);
    textarea.focus({ preventScroll: true });
    textarea.setSelectionRange(start, end < 0 ? value.length : end);
    textarea.scrollTop = Math.max(0, (highlight - 1) * LINE_HEIGHT - textarea.clientHeight / 3);
    // Only when a new line is asked for; typing must not move the view.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [highlight]);

  const onScroll = (event: UIEvent<HTMLTextAreaElement>) => setScroll({ top: event.currentTarget.scrollTop, left: event.currentTarget.scrollLeft });
  const shift = { transform: `translateY(${-scroll.top}px)` };
  const visibleMarks = marks.filter((mark) => Math.abs((mark.line - 1) * LINE_HEIGHT - scroll.top) < 2000);

  return (
    <div className="line-editor" style={{ height: (props.rows ?? 14) * LINE_HEIGHT + 2 * PADDING }}>
      <div className="gutter" aria-hidden="true">
        <pre style={shift}>{gutter}</pre>
        <div className="gutter-marks" style={shift}>
          {[...errorLines].map((line) => (
            <div key={line} className="gutter-error" style={{ top: PADDING + (line - 1) * LINE_HEIGHT }} />
          ))}
        </div>
      </div>
      <div className="surface">
        <div className="marks" aria-hidden="true" style={shift}>
          {highlight !== null ? <div className="mark-highlight" style={{ top: PADDING + (highlight - 1) * LINE_HEIGHT }} /> : null}
          {visibleMarks.map((mark) => (
            <div key={`${mark.line}:${mark.message}`} className="mark-error" style={{ top: PADDING + (mark.line - 1) * LINE_HEIGHT }}>
              <span className="mark-message">{mark.message}</span>
            </div>
          ))}
        </div>
        <textarea
          id={props.id}
          ref={area}
          aria-label={props.label}
          spellCheck={false}
          wrap="off"
          autoCapitalize="off"
          autoComplete="off"
          value={value}
          onChange={(event) => props.onChange(event.target.value)}
          onScroll={onScroll}
        />
      </div>
    </div>
  );
}
