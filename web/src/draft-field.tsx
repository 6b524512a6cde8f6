// Text inputs over structured state: the text being typed is kept as typed (a trailing comma or a half-written line is not
// reformatted away), and replaced only when the state changes from elsewhere (a scenario, an import, a link).
import { useEffect, useRef, useState } from "react";

export function useDraft(value: string, normalize: (text: string) => string, onChange: (text: string) => void) {
  const [draft, setDraft] = useState(value);
  const expected = useRef(value);
  useEffect(() => {
    if (value !== expected.current) {
      expected.current = value;
      setDraft(value);
    }
  }, [value]);
  const change = (text: string) => {
    setDraft(text);
    expected.current = normalize(text);
    onChange(text);
  };
  return [draft, change] as const;
}

export function DraftInput(props: { label: string; value: string; normalize: (text: string) => string; onChange: (text: string) => void; className?: string; placeholder?: string }) {
  const [draft, change] = useDraft(props.value, props.normalize, props.onChange);
  return <input type="text" aria-label={props.label} className={props.className} placeholder={props.placeholder} spellCheck={false} value={draft} onChange={(event) => change(event.target.value)} />;
}

export function DraftTextArea(props: { id?: string; label: string; value: string; normalize: (text: string) => string; onChange: (text: string) => void; rows?: number }) {
  const [draft, change] = useDraft(props.value, props.normalize, props.onChange);
  return <textarea id={props.id} aria-label={props.label} rows={props.rows ?? 6} spellCheck={false} wrap="off" value={draft} onChange={(event) => change(event.target.value)} />;
}

/** A number input that accepts only non-negative safe integers and keeps an empty field while typing. */
export function NumberInput(props: { label: string; value: number; onChange: (value: number) => void; className?: string }) {
  const [draft, change] = useDraft(String(props.value), (text) => String(Number(text)), (text) => {
    const value = Number(text);
    if (text.trim() !== "" && Number.isSafeInteger(value) && value >= 0) props.onChange(value);
  });
  return <input type="number" min={0} step={1} aria-label={props.label} className={props.className} value={draft} onChange={(event) => change(event.target.value)} />;
}
