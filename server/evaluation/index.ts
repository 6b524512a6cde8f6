// Public surface of the pure decision core (browser-safe: no Bun, Node, database, forge or clock imports).
export { evaluate } from "./evaluate.ts";
export { repositoryEnrollment } from "./analyze.ts";
export { renderCheck, renderDecision, withPreview, fitOutput, previewSection, PREVIEW_HEADING, type CheckOutput } from "./render-check.ts";
export { decideCheck, decideOnly, previewCheck, previewLeftOut, wantsPreview, type PreviewOmission } from "./decide-check.ts";
export { IN_PROGRESS_OUTPUT, publicationOf, type CheckPublication } from "./publication.ts";
export { NO_DIRECTORY_FACTS, planLookups, type LookupPlan } from "./plan-lookups.ts";
export { escapeHtml, escapeMarkdown, visible, visibleJson } from "./escape.ts";
export * from "./decision.ts";
export * from "./evidence.ts";
export * from "./change-preview.ts";
