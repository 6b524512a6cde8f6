// The policy playground (issue 10): every input on the left, the explanation of the engine's Decision on the right. The
// whole state lives in the URL fragment; nothing is sent anywhere.
import { useCallback, useEffect, useRef, useState } from "react";
import { codeownersLocations, type CodeownersLocation, type Evidence } from "../../server/evaluation/evidence.ts";
import { forgeDirectoryProblem } from "../../server/policy/forge-directory.ts";
import { decodeState } from "./codec.ts";
import { DirectoryInputs } from "./directory-inputs.tsx";
import { ExplanationView } from "./explanation.tsx";
import { LineEditor } from "./line-editor.tsx";
import { FilesInput, PullRequestInputs, ReviewsInput } from "./pull-request-inputs.tsx";
import { EVIDENCE_DOCUMENT_FORMAT, readStateText } from "./read-state.ts";
import { DEFAULT_SCENARIO, SCENARIOS } from "./scenarios.ts";
import {
  codeownersFile,
  codeownersIn,
  fileText,
  foundFile,
  withChangePreview,
  withCodeownersAt,
  withForgeDirectory,
  withHeadCodeownersAt,
  withoutChangePreview,
  withRepositoryPolicy,
  type PlaygroundState,
} from "./state.ts";
import { useExplanation } from "./use-explanation.ts";

const FRAGMENT_DELAY_MS = 50;

/** Where the code-owners file sits, or none: the service's own precedence list for the forge directory. */
function CodeownersLocationSelect(props: { label: string; forgeDirectory: string; value: CodeownersLocation | null; onChange: (location: CodeownersLocation | null) => void }) {
  return (
    <label>
      Location{" "}
      <select aria-label={props.label} value={props.value ?? "none"} onChange={(event) => props.onChange(event.target.value === "none" ? null : (event.target.value as CodeownersLocation))}>
        {codeownersLocations(props.forgeDirectory).map((l) => <option key={l} value={l}>{l}</option>)}
        <option value="none">no code-owners file</option>
      </select>
    </label>
  );
}

/**
 * SERVICE_FORGE_DIRECTORY: applied once the text is a directory the service accepts (the code-owners file read at the old
 * directory moves with it); until then the refusal is shown and the decision stays under the last valid one.
 */
function ForgeDirectoryInput(props: { value: string; onChange: (forgeDirectory: string) => void }) {
  const [draft, setDraft] = useState(props.value);
  useEffect(() => setDraft(props.value), [props.value]);
  const problem = forgeDirectoryProblem(draft);
  return (
    <>
      <label>
        Forge directory{" "}
        <input aria-label="Forge directory" aria-invalid={problem !== null} spellCheck={false} value={draft} onChange={(event) => {
          setDraft(event.target.value);
          if (forgeDirectoryProblem(event.target.value) === null) props.onChange(event.target.value);
        }} />{" "}
        <span className="muted">(SERVICE_FORGE_DIRECTORY: .forge, or .github on GitHub)</span>
      </label>
      {problem !== null ? <p className="warn" role="status" data-testid="forge-directory-problem">The forge directory {problem}; the decision uses {props.value}.</p> : null}
    </>
  );
}

function PolicyInput(props: { id: string; name: string; read: Evidence["repositoryPolicy"]; path: string; errors: readonly { location: string; message: string }[]; onChange: (read: Evidence["repositoryPolicy"]) => void; absentMeans: string }) {
  const present = props.read.kind !== "missing";
  return (
    <>
      <label className="inline">
        <input type="checkbox" checked={present} onChange={(event) => props.onChange(event.target.checked ? foundFile(props.path, fileText(props.read)) : { kind: "missing" })} />
        {props.name} file present <span className="muted">({props.absentMeans})</span>
      </label>
      {props.read.kind === "found" || props.read.kind === "missing" ? (
        present ? (
          <textarea id={props.id} aria-label={props.name} rows={8} spellCheck={false} wrap="off" value={fileText(props.read)} onChange={(event) => props.onChange(foundFile(props.path, event.target.value))} />
        ) : null
      ) : (
        <p className="warn">
          Read as {props.read.kind}{"detail" in props.read ? `: ${props.read.detail}` : ""}.{" "}
          <button type="button" onClick={() => props.onChange(foundFile(props.path, ""))}>Replace with an empty file</button>
        </p>
      )}
      {props.errors.length > 0 ? (
        <ul className="errors" aria-label={`${props.name} errors`}>
          {props.errors.map((error, index) => <li key={index}><strong>{error.location}</strong>: {error.message}</li>)}
        </ul>
      ) : null}
    </>
  );
}

export function App() {
  const [state, setState] = useState<PlaygroundState>(() => DEFAULT_SCENARIO.build());
  const [scenarioId, setScenarioId] = useState<string>(DEFAULT_SCENARIO.id);
  const [query, setQuery] = useState("");
  const [highlight, setHighlight] = useState<{ line: number; n: number } | null>(null);
  const [headHighlight, setHeadHighlight] = useState<{ line: number; n: number } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [importText, setImportText] = useState("");
  const [link, setLink] = useState("");
  const [loaded, setLoaded] = useState(false);
  const written = useRef<string>("");
  const { explanation, error, latency, busy, fragment, revision } = useExplanation(state, query);

  // Load the state from the fragment (a shared link), then keep the fragment in step with every edit.
  useEffect(() => {
    const apply = async () => {
      const hash = window.location.hash;
      if (hash.length <= 1 || hash.slice(1) === written.current) return setLoaded(true);
      const decoded = await decodeState(hash);
      if (decoded.ok) {
        written.current = hash.slice(1);
        setState(decoded.state);
        setScenarioId("");
        setNotice(null);
      } else setNotice(`Could not load the link: ${decoded.error}. Showing a built-in scenario instead.`);
      setLoaded(true);
    };
    void apply();
    window.addEventListener("hashchange", apply);
    return () => window.removeEventListener("hashchange", apply);
  }, []);
  useEffect(() => {
    if (!loaded || fragment === null) return;
    const timer = setTimeout(() => {
      written.current = fragment;
      window.history.replaceState(null, "", `#${fragment}`);
      setLink(window.location.href);
    }, FRAGMENT_DELAY_MS);
    return () => clearTimeout(timer);
  }, [fragment, loaded]);

  const update = useCallback((change: (evidence: Evidence) => Evidence) => setState((s) => ({ ...s, evidence: change(s.evidence) })), []);
  const showLine = useCallback((line: number) => setHighlight((h) => ({ line, n: (h?.n ?? 0) + 1 })), []);
  const showHeadLine = useCallback((line: number) => setHeadHighlight((h) => ({ line, n: (h?.n ?? 0) + 1 })), []);

  const forgeDirectory = state.settings.forgeDirectory;
  const file = codeownersFile(state.evidence, forgeDirectory);
  const location = file?.location ?? null;
  const codeownersText = file !== null ? fileText(file.read) : "";
  const marks = (explanation?.codeowners.errors ?? []).map((e) => ({ line: e.line, message: e.message }));
  // The second CODEOWNERS: the head's, shown only while the change preview is on (evidence.headFiles).
  const head = state.evidence.headFiles;
  const headFile = head === undefined ? null : codeownersIn(head.codeowners, forgeDirectory);
  const headLocation = headFile?.location ?? null;
  const headText = headFile !== null ? fileText(headFile.read) : "";
  const preview = explanation?.preview ?? null;
  const headMarks =
    preview?.kind === "preview" ? preview.invalid.filter((p) => p.line !== null && p.file === preview.codeownersPath.after).map((p) => ({ line: p.line!, message: p.message })) : [];
  const headPolicyDiffers = head !== undefined && JSON.stringify(head.repositoryPolicy) !== JSON.stringify(state.evidence.repositoryPolicy);

  const importDocument = (text: string) => {
    const result = readStateText(text);
    if (!result.ok) return setNotice(`Could not import: ${result.error}.`);
    setState(result.state);
    setScenarioId("");
    setNotice("Imported the evidence document.");
  };
  const exportDocument = () => {
    const blob = new Blob([JSON.stringify({ format: EVIDENCE_DOCUMENT_FORMAT, version: 1, evidence: state.evidence, settings: state.settings }, null, 2)], { type: "application/json" });
    const anchor = document.createElement("a");
    anchor.href = URL.createObjectURL(blob);
    anchor.download = `evidence-${state.evidence.repository.name}-${state.evidence.pullRequest.number}.json`;
    anchor.click();
    setTimeout(() => URL.revokeObjectURL(anchor.href), 1000);
  };
  const scenario = SCENARIOS.find((s) => s.id === scenarioId);

  return (
    <>
      <header>
        <h1>Policy playground</h1>
        <p className="muted">The service's own decision engine, running in this page. Nothing you type leaves it; the state is kept in the link.</p>
        <div className="toolbar">
          <label>
            Scenario{" "}
            <select aria-label="Scenario" value={scenarioId} onChange={(event) => {
              const chosen = SCENARIOS.find((s) => s.id === event.target.value);
              if (chosen === undefined) return;
              setScenarioId(chosen.id);
              setState(chosen.build());
              setHighlight(null);
              setHeadHighlight(null);
              setNotice(null);
            }}>
              <option value="" disabled>(edited or imported)</option>
              {SCENARIOS.map((s) => <option key={s.id} value={s.id}>{s.title}</option>)}
            </select>
          </label>
          <label className="grow">
            Link to this state <input type="text" readOnly aria-label="Link to this state" value={link} onFocus={(event) => event.target.select()} />
          </label>
        </div>
        {scenario !== undefined ? <p className="lesson" data-testid="lesson">{scenario.lesson}</p> : null}
        {notice !== null ? <p className="notice" role="alert">{notice}</p> : null}
      </header>
      <main>
        <div className="inputs">
          <section aria-labelledby="h-codeowners">
            <h2 id="h-codeowners">CODEOWNERS</h2>
            <ForgeDirectoryInput value={forgeDirectory} onChange={(directory) => setState((s) => withForgeDirectory(s, directory))} />
            <CodeownersLocationSelect label="CODEOWNERS location" forgeDirectory={forgeDirectory} value={location} onChange={(at) => update((e) => withCodeownersAt(e, at, codeownersText, forgeDirectory))} />
            {file !== null && file.read.kind === "found" ? (
              <LineEditor id="codeowners" label="CODEOWNERS" value={codeownersText} onChange={(text) => update((e) => withCodeownersAt(e, location, text, forgeDirectory))} marks={marks} highlight={highlight === null ? null : { line: highlight.line, request: highlight.n }} key={`${location}`} />
            ) : file !== null ? (
              <p className="warn">The code-owners file was read as {file.read.kind}. <button type="button" onClick={() => update((e) => withCodeownersAt(e, location, "", forgeDirectory))}>Replace with an empty file</button></p>
            ) : null}
            {explanation !== null && explanation.codeowners.errorCount > 0 ? (
              <ul className="errors" aria-label="CODEOWNERS errors">
                {explanation.codeowners.errors.map((e) => (
                  <li key={`${e.line}:${e.message}`}>
                    <button type="button" className="link" onClick={() => showLine(e.line)}>line {e.line}</button>: {e.message}
                  </li>
                ))}
                {explanation.codeowners.errorCount > explanation.codeowners.errors.length ? <li>and {explanation.codeowners.errorCount - explanation.codeowners.errors.length} more</li> : null}
              </ul>
            ) : null}
            <p className="hint" data-testid="rule-count">{explanation?.codeowners.rules ?? 0} rules. Last matching rule wins; a rule with no owners makes paths unowned.</p>
            {head === undefined ? (
              <button type="button" onClick={() => update(withChangePreview)}>Add CODEOWNERS after this pull request</button>
            ) : (
              <section aria-labelledby="h-codeowners-after">
                <h3 id="h-codeowners-after">After this pull request</h3>
                <p className="hint">
                  The file as the pull request's head has it. The decision keeps using the file above (the base commit); what this one would change once merged is shown beside the decision.
                </p>
                <CodeownersLocationSelect label="CODEOWNERS location after this pull request" forgeDirectory={forgeDirectory} value={headLocation} onChange={(at) => update((e) => withHeadCodeownersAt(e, at, headText, forgeDirectory))} />
                {headFile !== null && headFile.read.kind === "found" ? (
                  <LineEditor id="codeowners-after" label="CODEOWNERS after this pull request" value={headText} onChange={(text) => update((e) => withHeadCodeownersAt(e, headLocation, text, forgeDirectory))} marks={headMarks} highlight={headHighlight === null ? null : { line: headHighlight.line, request: headHighlight.n }} key={`after-${headLocation}`} />
                ) : headFile !== null ? (
                  <p className="warn">The code-owners file after this pull request was read as {headFile.read.kind}. <button type="button" onClick={() => update((e) => withHeadCodeownersAt(e, headLocation, "", forgeDirectory))}>Replace it with an empty file</button></p>
                ) : null}
                {explanation !== null && explanation.preview === null ? (
                  <p className="hint" data-testid="no-preview">No preview: the worker adds it only to a check it publishes, and this decision is {explanation.decision.kind === "retry" ? "a retry" : "not enabled"}.</p>
                ) : null}
                {headPolicyDiffers ? <p className="hint">The repository policy after this pull request differs from the one below (as the loaded evidence document has it); the preview uses it.</p> : null}
                <button type="button" onClick={() => { update(withoutChangePreview); setHeadHighlight(null); }}>Remove CODEOWNERS after this pull request</button>
              </section>
            )}
          </section>

          <section aria-labelledby="h-policies">
            <h2 id="h-policies">Policies</h2>
            <PolicyInput id="repository-policy" name="Repository policy" path={state.settings.policyPath} read={state.evidence.repositoryPolicy} errors={explanation?.repositoryPolicyErrors ?? []} absentMeans="absent: the repository has not opted in" onChange={(read) => update((e) => withRepositoryPolicy(e, read))} />
            <PolicyInput id="organization-policy" name="Organization policy" path={state.settings.policyPath} read={state.evidence.organizationPolicy} errors={explanation?.organizationPolicyErrors ?? []} absentMeans="absent: no trusted Apps, no guardrails" onChange={(read) => update((e) => ({ ...e, organizationPolicy: read }))} />
            <label className="inline">
              <input type="checkbox" checked={state.settings.allowInsecureChanges} onChange={(event) => setState((s) => ({ ...s, settings: { ...s.settings, allowInsecureChanges: event.target.checked } }))} />
              SERVICE_ALLOW_INSECURE_CHANGES <span className="muted">(removes only the built-in non-delegable paths)</span>
            </label>
          </section>

          <section aria-labelledby="h-pr">
            <h2 id="h-pr">Pull request</h2>
            <PullRequestInputs evidence={state.evidence} update={update} />
            <h3>Changed files</h3>
            <FilesInput evidence={state.evidence} update={update} />
          </section>

          <section aria-labelledby="h-reviews">
            <h2 id="h-reviews">Reviews, oldest first</h2>
            <ReviewsInput evidence={state.evidence} update={update} />
          </section>

          <section aria-labelledby="h-directory">
            <h2 id="h-directory">Directory facts</h2>
            <DirectoryInputs evidence={state.evidence} plan={explanation?.plan ?? null} update={update} />
          </section>

          <section aria-labelledby="h-import">
            <h2 id="h-import">Real data</h2>
            <p className="hint">
              <code>service explain --repository OWNER/NAME --pull N --json</code> prints the evidence the worker would use. Load it here, then edit the CODEOWNERS or a policy to see what would change.
            </p>
            <label>
              Evidence file <input type="file" accept="application/json,.json" aria-label="Evidence file" onChange={async (event) => {
                const picked = event.target.files?.[0];
                if (picked !== undefined) importDocument(await picked.text());
                event.target.value = "";
              }} />
            </label>
            <textarea aria-label="Paste an evidence document" rows={4} placeholder="…or paste the JSON here" value={importText} onChange={(event) => setImportText(event.target.value)} />
            <div className="row">
              <button type="button" disabled={importText.trim() === ""} onClick={() => { importDocument(importText); setImportText(""); }}>Load pasted document</button>
              <button type="button" onClick={exportDocument}>Download this state as an evidence document</button>
            </div>
          </section>
        </div>

        <div className="output">
          <section aria-labelledby="h-tester" className="tester">
            <h2 id="h-tester">Who owns this path?</h2>
            <input type="text" aria-label="Path to test" placeholder="src/app.ts" spellCheck={false} value={query} onChange={(event) => setQuery(event.target.value)} />
            {explanation?.query != null ? (
              <p data-testid="path-owner">
                {explanation.query.line === null ? (
                  <>No rule matches <code>{explanation.query.path}</code>: it is unowned{location === null ? " (there is no code-owners file)" : ""}.</>
                ) : explanation.query.owners.length === 0 ? (
                  <>Unowned: <button type="button" className="link" onClick={() => showLine(explanation.query!.line!)}>line {explanation.query.line}</button> (<code>{explanation.query.pattern}</code>) matches last and names no owners.</>
                ) : (
                  <>
                    <button type="button" className="link" onClick={() => showLine(explanation.query!.line!)}>Line {explanation.query.line}</button> (<code>{explanation.query.pattern}</code>) owns it:{" "}
                    {explanation.query.owners.map((owner) => <code key={owner}>{owner} </code>)}
                  </>
                )}
                {explanation.query.nonDelegable !== null ? <> Non-delegable by <code>{explanation.query.nonDelegable.pattern}</code> ({explanation.query.nonDelegable.origin}).</> : null}
              </p>
            ) : null}
          </section>
          <h2>Decision</h2>
          {error !== null ? <p className="notice" role="alert">The engine failed on this input: {error}</p> : null}
          {explanation !== null ? <ExplanationView explanation={explanation} onLine={showLine} onPreviewLine={showHeadLine} /> : <p>Evaluating…</p>}
          <p className="muted timing" data-testid="timing" data-busy={busy ? "true" : "false"} data-revision={revision}>
            {explanation !== null ? `Evaluated in ${explanation.milliseconds.toFixed(1)} ms (engine ${explanation.phases.evaluate.toFixed(0)} ms, page extras ${explanation.phases.extras.toFixed(0)} ms)${latency !== null ? `; ${latency.toFixed(0)} ms from the edit` : ""}.` : ""}
          </p>
        </div>
      </main>
    </>
  );
}
