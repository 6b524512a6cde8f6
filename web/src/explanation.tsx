// The explanation, rendered from the Decision (never re-derived): conclusion, the check run as the forge shows it, every
// owner set with its paths and owning lines, approvals and why other reviews did not count, suggested reviewers and every
// fail-closed reason; beside it, the change preview of the second CODEOWNERS ("after this pull request", issue 19 item 3).
import { memo, useState } from "react";
import { IN_PROGRESS_OUTPUT, type CheckPublication, type OwnerSetLabel, type OwnerSetResult, type PreviewResult, type Text } from "../../server/evaluation/index.ts";
import type { Explanation, PathOwnership } from "./engine.ts";
import { BreakGlassView } from "./break-glass-view.tsx";
import { Markdown } from "./markdown.tsx";

export function TextView({ text }: { text: Text }) {
  return <>{text.map((part, index) => (typeof part === "string" ? part : <code key={index}>{part.code}</code>))}</>;
}

const STATUS: Record<OwnerSetResult["status"], string> = { satisfied: "approved", missing: "needs approval", blocked: "changes requested", unknown: "could not be decided" };

function LineLink({ ownership, onLine }: { ownership: PathOwnership; onLine: (line: number) => void }) {
  if (ownership.line === null) return <span className="muted">no rule</span>;
  return (
    <button type="button" className="link" onClick={() => onLine(ownership.line!)} aria-label={`Show CODEOWNERS line ${ownership.line} for ${ownership.path}`}>
      line {ownership.line}
    </button>
  );
}

type OwnerSetProps = { set: OwnerSetResult; index: number; paths: readonly PathOwnership[]; fingerprint: string; onLine: (line: number) => void };

const OwnerSet = memo(OwnerSetView, (a: OwnerSetProps, b: OwnerSetProps) => a.fingerprint === b.fingerprint && a.index === b.index && a.onLine === b.onLine);

function OwnerSetView({ set, index, paths, onLine }: OwnerSetProps) {
  const nonDelegable = new Set(set.nonDelegablePaths);
  return (
    <section className={`owner-set status-${set.status}`} aria-label={`Owner set ${index + 1}`} data-testid="owner-set">
      <h4>
        Owner set {index + 1}: <span className="status">{STATUS[set.status]}</span>{" "}
        <span className="count">({set.counted.length} of {set.required} approvals)</span>
      </h4>
      <p>Owners: {set.owners.map((owner) => <code key={owner}>{owner}</code>).reduce<React.ReactNode[]>((all, node, i) => (i === 0 ? [node] : [...all, " ", node]), [])}</p>
      <table className="paths">
        <caption className="visually-hidden">Paths of owner set {index + 1}</caption>
        <thead>
          <tr><th scope="col">Path ({set.paths.length})</th><th scope="col">Owning rule</th><th scope="col">App approval</th></tr>
        </thead>
        <tbody>
          {paths.map((ownership) => (
            <tr key={ownership.path}>
              <td><code>{ownership.path}</code></td>
              <td><LineLink ownership={ownership} onLine={onLine} /> {ownership.pattern !== null ? <code className="muted">{ownership.pattern}</code> : null}</td>
              <td>
                {nonDelegable.has(ownership.path) && ownership.nonDelegable !== null ? (
                  <span className="warn">non-delegable: <code>{ownership.nonDelegable.pattern}</code> ({ownership.nonDelegable.origin})</span>
                ) : nonDelegable.has(ownership.path) ? <span className="warn">non-delegable</span> : <span className="muted">delegable</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {set.paths.length > paths.length ? <p className="muted">and {set.paths.length - paths.length} more paths (ask “Who owns this path?” about any of them)</p> : null}
      {set.counted.length > 0 ? (
        <>
          <h5>Approvals counted</h5>
          <ul>
            {set.counted.map((approval) => (
              <li key={approval.reviewer}>
                <code>{approval.reviewer}</code> {approval.via.kind === "app" ? <>for the App delegation <code>{approval.via.app}</code></> : <>as <code>{approval.via.owner}</code></>}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {set.notCounted.length > 0 ? (
        <>
          <h5>Reviews that did not count</h5>
          <ul className="not-counted">
            {set.notCounted.map((entry, i) => (
              <li key={i}><code>{entry.reviewer}</code>: <TextView text={entry.why} /></li>
            ))}
          </ul>
        </>
      ) : null}
      {set.blockedBy.length > 0 ? <p className="bad">Changes requested by {set.blockedBy.map((login) => <code key={login}>{login}</code>)}</p> : null}
      {set.unresolved.length > 0 ? (
        <>
          <h5>Could not be established</h5>
          <ul>{set.unresolved.map((text, i) => <li key={i}><TextView text={text} /></li>)}</ul>
        </>
      ) : null}
    </section>
  );
}

/** Owners or Apps shown per owner set before "and N more" (as the check output shortens them). */
export const MAX_LABEL_NAMES = 10;

function Names({ names }: { names: readonly string[] }) {
  const shown = names.slice(0, MAX_LABEL_NAMES).map((name) => <code key={name}>{name}</code>);
  return (
    <>
      {shown.reduce<React.ReactNode[]>((all, node, i) => (i === 0 ? [node] : [...all, " ", node]), [])}
      {names.length > MAX_LABEL_NAMES ? ` and ${names.length - MAX_LABEL_NAMES} more` : null}
    </>
  );
}

function Label({ label }: { label: OwnerSetLabel }) {
  return (
    <span className="owner-label">
      {label.owners.length === 0 ? <span className="muted">no owners</span> : <Names names={label.owners} />}
      {label.apps.length > 0 ? <> (or App <Names names={label.apps} />)</> : null}
    </span>
  );
}

// The change preview: what the second CODEOWNERS would do once merged, from the worker's own decideCheck() (the section the
// check run gains). Its lists are already bounded by the core, with "and N more" for the rest.
export const ChangePreviewView = memo(function ChangePreviewView({ preview, onLine }: { preview: PreviewResult; onLine: (line: number) => void }) {
  const heading = <h3 id="h-preview">After this pull request <span className="muted">(a preview, not part of the decision, which uses the base commit's files)</span></h3>;
  if (preview.kind === "unavailable") {
    return (
      <section className="preview" aria-labelledby="h-preview">
        {heading}
        <p className="warn" data-testid="preview-unavailable">The preview is left out: <TextView text={preview.why} />.</p>
      </section>
    );
  }
  const { before, after } = preview.codeownersPath;
  const invalidCount = preview.invalid.length + preview.invalidOmitted;
  const changeCount = preview.ownershipChanges.length + preview.ownershipChangesOmitted;
  const quiet = invalidCount === 0 && preview.problems.length === 0 && preview.requiredApprovals === null && changeCount === 0 && preview.notes.length === 0;
  return (
    <section className="preview" aria-labelledby="h-preview">
      {heading}
      {before !== after ? <p>Code-owners file: <code>{before ?? "none"}</code> → <code>{after ?? "none"}</code></p> : null}
      {invalidCount > 0 ? (
        <>
          <h4>Invalid after this pull request ({invalidCount})</h4>
          <ul className="errors" aria-label="Invalid after this pull request">
            {preview.invalid.map((problem, index) => (
              <li key={index}>
                <code>{problem.file}</code>
                {problem.line === null ? null : problem.file === after ? (
                  <> <button type="button" className="link" onClick={() => onLine(problem.line!)}>line {problem.line}</button></>
                ) : <> line {problem.line}</>}
                : {problem.message}
              </li>
            ))}
            {preview.invalidOmitted > 0 ? <li>and {preview.invalidOmitted} more</li> : null}
          </ul>
        </>
      ) : null}
      {preview.problems.length > 0 ? (
        <>
          <h4>Would fail after this pull request</h4>
          <ul className="reasons">{preview.problems.map((reason, i) => <li key={i}><TextView text={reason.message} /></li>)}</ul>
        </>
      ) : null}
      {preview.requiredApprovals !== null ? <p>Required approvals: {preview.requiredApprovals.before} → {preview.requiredApprovals.after}</p> : null}
      {changeCount > 0 ? (
        <>
          <h4>Changed files whose owners would change ({changeCount})</h4>
          <ul className="ownership-changes" aria-label="Owners that would change">
            {preview.ownershipChanges.map((change) => (
              <li key={change.path}>
                <code>{change.path}</code>: <Label label={change.before} /> → <Label label={change.after} />
              </li>
            ))}
            {preview.ownershipChangesOmitted > 0 ? <li className="muted">and {preview.ownershipChangesOmitted} more</li> : null}
          </ul>
        </>
      ) : null}
      {preview.notes.map((note, i) => <p key={i} className="warn"><TextView text={note} /></p>)}
      {quiet ? <p data-testid="preview-quiet">The new file is valid and no changed file's owners would change.</p> : null}
    </section>
  );
});

/**
 * The verdict and the check run as the forge shows them, from what the worker writes: a completed check's conclusion, a check
 * left in progress (a shared head), or, when nothing is written, what the decision says and what the check still shows.
 */
function forgeView(published: CheckPublication, decisionTitle: string): { verdict: string; title: string; status: string | null; output: { title: string; summary: string; text?: string } | null } {
  switch (published.kind) {
    case "completed":
      return { verdict: published.conclusion, title: published.output.title, status: `completed: ${published.conclusion}`, output: published.output };
    case "in_progress":
      return { verdict: "in progress", title: published.output.title, status: "in progress", output: published.output };
    case "none":
      if (published.why === "retry") return { verdict: "retry", title: decisionTitle, status: "in progress", output: IN_PROGRESS_OUTPUT };
      if (published.why === "not_enabled") return { verdict: "not enabled", title: decisionTitle, status: null, output: null };
      return { verdict: "left alone", title: decisionTitle, status: null, output: null };
  }
}

export const ExplanationView = memo(function ExplanationView({ explanation, onLine, onPreviewLine }: { explanation: Explanation; onLine: (line: number) => void; onPreviewLine: (line: number) => void }) {
  const { decision, check } = explanation;
  const [raw, setRaw] = useState(false);
  const forge = forgeView(explanation.published, check.title);
  const verdict = forge.verdict;
  return (
    <div className="explanation">
      <div className={`verdict verdict-${verdict.replace(" ", "-")}`} role="status" aria-live="polite">
        <span className="conclusion" data-testid="conclusion">{verdict}</span>
        <span className="title" data-testid="check-title">{forge.title}</span>
      </div>
      {decision.kind === "retry" ? <p>The worker would retry: nothing is published and the check stays in progress.</p> : null}
      {decision.kind === "not_enabled" ? <p>No managed check is created for this repository.</p> : null}
      {explanation.published.kind === "in_progress" ? <p className="warn">On a shared head the worker leaves the check in progress, titled with the other pull request, rather than completing it: it would fail ({check.title}).</p> : null}
      {explanation.published.kind === "none" && explanation.published.why === "closed_shared_head" ? <p>This closed pull request's head is also an open pull request's: that one's evaluation writes the check, this one writes nothing.</p> : null}

      {decision.reasons.length > 0 ? (
        <section aria-label="Fail-closed reasons">
          <h3>Why it cannot succeed</h3>
          <ul className="reasons" data-testid="reasons">
            {decision.reasons.map((reason, i) => (
              <li key={i} data-code={reason.code}>
                <TextView text={reason.message} /> {reason.transient ? <span className="muted">(transient: retried)</span> : null}
                {reason.details !== undefined && reason.details.length > 0 ? (
                  <ul>{reason.details.slice(0, 50).map((detail, j) => <li key={j}><TextView text={detail} /></li>)}</ul>
                ) : null}
              </li>
            ))}
          </ul>
        </section>
      ) : null}

      <BreakGlassView decision={decision} />

      {decision.suggestedReviewers.length > 0 ? (
        <p data-testid="suggested">Suggested reviewers: {decision.suggestedReviewers.map((owner) => <code key={owner}>{owner}</code>).reduce<React.ReactNode[]>((all, node, i) => (i === 0 ? [node] : [...all, ", ", node]), [])}</p>
      ) : null}

      {explanation.preview !== null ? <ChangePreviewView preview={explanation.preview} onLine={onPreviewLine} /> : null}

      {decision.ownerSets.length > 0 || decision.kind === "conclusive" ? (
        <section aria-label="Owner sets">
          <h3>Owner sets ({decision.ownerSets.length}); unowned changed paths: {decision.unownedPathCount}</h3>
          {decision.ownerSets.slice(0, 100).map((set, index) => (
            <OwnerSet key={set.owners.join(" ")} set={set} index={index} paths={explanation.setPaths[index] ?? []} fingerprint={explanation.setFingerprints[index] ?? ""} onLine={onLine} />
          ))}
          {decision.ownerSets.length > 100 ? <p className="muted">and {decision.ownerSets.length - 100} more owner sets</p> : null}
        </section>
      ) : null}

      {explanation.reviews.length > 0 ? (
        <section aria-label="Reviews">
          <h3>Every review, and what it did</h3>
          <table className="paths" data-testid="review-effects">
            <caption className="visually-hidden">Reviews in forge order and their effect</caption>
            <thead>
              <tr><th scope="col">#</th><th scope="col">Reviewer</th><th scope="col">State</th><th scope="col">Effect</th></tr>
            </thead>
            <tbody>
              {explanation.reviews.map((review) => (
                <tr key={review.position}>
                  <td>{review.position}</td>
                  <td><code>{review.reviewer}</code></td>
                  <td>{review.state.toLowerCase().replace("_", " ")}</td>
                  <td>{review.effects.map((effect, i) => <div key={i}><TextView text={effect} /></div>)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}

      <section aria-label="Check run">
        <h3>
          The check run as the forge shows it{" "}
          <button type="button" className="link" aria-pressed={raw} onClick={() => setRaw(!raw)}>{raw ? "show rendered" : "show Markdown"}</button>
        </h3>
        {forge.output === null ? (
          <p className="muted" data-testid="forge-check-status">No check run is written.</p>
        ) : (
          <div className="check">
            <p className="check-name"><strong>{decision.checkName}</strong> (<span data-testid="forge-check-status">{forge.status}</span>): <span data-testid="forge-check-title">{forge.output.title}</span></p>
            {raw ? (
              <>
                <pre className="raw" aria-label="Check summary Markdown">{forge.output.summary}</pre>
                {forge.output.text !== undefined ? <pre className="raw" aria-label="Check text Markdown">{forge.output.text}</pre> : null}
              </>
            ) : (
              <>
                <Markdown source={forge.output.summary} />
                {forge.output.text !== undefined ? <Markdown source={forge.output.text} /> : null}
              </>
            )}
          </div>
        )}
      </section>
    </div>
  );
});
