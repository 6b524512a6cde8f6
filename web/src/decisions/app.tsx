// The decisions page (issue 28 item 5): search the service's decision and merge records by repository, pull request or
// commit, and read one record: its owner sets and the reviews that satisfied them, the files it read (linked on the forge at
// the commit read), unapproved merges highlighted, unconfirmed records marked, and its inputs handed to the playground.
// A break-glass override (issue 29 item 4) is shown plainly: a badge on its decision and merge rows, a search filter
// (`overrides=true`), the reviewer, team, review and reason on its decision, and the merge of an overridden head says so.
// A merge group's record (the merge queue's group commit) lists its pull requests and why each passed or was refused, and
// a merge through the queue links to it.
// Addresses: `/decisions/?repository=…&pull=…&commit=…&unapproved=true&overrides=true` (a search) and `/decisions/?id=d12`
// (a record), so every view is a link an operator can share inside the operator network.
import { type ReactNode, useEffect, useState } from "react";
import { DEFAULT_FORGE_DIRECTORY } from "../../../server/policy/forge-directory.ts";
import type { DecisionRecord, HistoryRecord, RecordedBreakGlass, HistorySummary, MergeGroupRecord, MergeRecord, RecordedApproval, RecordedFile } from "../../../server/records/schema.ts";
import { listRecords, readRecord, searchQuery, type ApiError } from "./api.ts";
import { type Handoff, handoffOf, playgroundHref } from "./handoff.ts";
import { blobUrl, commitUrl, forgeOrigin, pullUrl } from "./links.ts";

/** `signedIn`: the forge login of the person signed in, or null (a token holder, or a page outside the service). */
export type PageSettings = { readonly web: string | null; readonly playground: boolean; readonly signedIn?: string | null };

export function readSettings(doc: Document): PageSettings {
  const meta = (name: string) => doc.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
  return { web: forgeOrigin(meta("forge-web-url")), playground: meta("playground") === "enabled", signedIn: meta("signed-in") || null };
}

const short = (sha: string | null) => (sha === null ? "none" : sha.slice(0, 12));

function Link(props: { href: string | null; children: ReactNode }) {
  return props.href === null ? <>{props.children}</> : <a href={props.href} rel="noreferrer noopener">{props.children}</a>;
}

function Sha(props: { sha: string | null; href?: string | null; label?: string }) {
  if (props.sha === null) return <span className="muted">none</span>;
  return (
    <code className="sha" title={props.sha}>
      <Link href={props.href ?? null}>{props.sha}</Link>
    </code>
  );
}

function Problem(props: { error: ApiError }) {
  return <p role="alert" className="problem">{props.error.message}</p>;
}

function SearchForm(props: { params: URLSearchParams }) {
  const value = (name: string) => props.params.get(name) ?? "";
  return (
    <form className="search" method="get" action="./" role="search" aria-label="Search records">
      <div className="field">
        <label htmlFor="repository">Repository</label>
        <input id="repository" name="repository" type="text" placeholder="owner/name" defaultValue={value("repository")} autoComplete="off" spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor="pull">Pull request</label>
        <input id="pull" name="pull" type="text" inputMode="numeric" placeholder="number" defaultValue={value("pull")} autoComplete="off" aria-describedby="pull-hint" />
        <span id="pull-hint" className="hint">with a repository</span>
      </div>
      <div className="field wide">
        <label htmlFor="commit">Commit</label>
        <input id="commit" name="commit" type="text" placeholder="full SHA: head or merge commit" defaultValue={value("commit")} autoComplete="off" spellCheck={false} />
      </div>
      <div className="field check">
        <input id="unapproved" name="unapproved" type="checkbox" value="true" defaultChecked={value("unapproved") === "true"} />
        <label htmlFor="unapproved">Unapproved merges only</label>
      </div>
      <div className="field check">
        <input id="overrides" name="overrides" type="checkbox" value="true" defaultChecked={value("overrides") === "true"} />
        <label htmlFor="overrides">Break-glass overrides only</label>
      </div>
      <button type="submit">Search</button>
    </form>
  );
}

function OverrideBadge() {
  return <span className="badge override-badge">break-glass override</span>;
}

function SummaryResult(props: { item: HistorySummary }) {
  const { item } = props;
  if (item.kind === "merge") {
    if (item.enrollment === "not_enrolled") return <span>Merged where the service was not enabled (not enrolled)</span>;
    if (item.unapproved) return <span><strong className="unapproved-label">Unapproved merge</strong>{item.reset_at !== null ? " (its success was withdrawn by a reset)" : null}{item.break_glass ? <OverrideBadge /> : null}</span>;
    if (item.break_glass) {
      return <span><strong className="override-label">Merged on a break-glass override</strong>, approved by {item.decision_id ?? "a decision"}<OverrideBadge /></span>;
    }
    return <span>Merged, approved by {item.decision_id ?? "a decision"}</span>;
  }
  return (
    <span>
      <span className={item.conclusion === "success" ? "ok" : "bad"}>{item.conclusion}</span>: {item.title}
      {item.break_glass ? <OverrideBadge /> : null}
      {item.confirmed ? null : <span className="badge warn-badge">unconfirmed</span>}
    </span>
  );
}

function SearchPage(props: { params: URLSearchParams }) {
  const [items, setItems] = useState<readonly HistorySummary[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const load = async (cursor: string | null) => {
    setBusy(true);
    const answer = await listRecords(searchQuery(props.params, cursor));
    setBusy(false);
    if (!answer.ok) return setError(answer.error);
    setError(null);
    setItems((before) => (cursor === null || before === null ? answer.value.items : [...before, ...answer.value.items]));
    setNext(answer.value.next_cursor);
  };
  useEffect(() => {
    void load(null);
  }, []);
  return (
    <>
      <SearchForm params={props.params} />
      <section aria-labelledby="results-heading">
        <h2 id="results-heading">Records</h2>
        {error !== null ? <Problem error={error} /> : null}
        {items === null && error === null ? <p aria-live="polite">Loading…</p> : null}
        {items !== null && items.length === 0 ? <p>No record matches.</p> : null}
        {items !== null && items.length > 0 ? (
          <table className="records" data-testid="results">
            <caption className="visually-hidden">Decision and merge records, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Record</th>
                <th scope="col">Repository</th>
                <th scope="col">Pull request</th>
                <th scope="col">Commit</th>
                <th scope="col">Result</th>
                <th scope="col">Time (UTC)</th>
              </tr>
            </thead>
            <tbody>
              {items.map((item) => (
                <tr key={item.id} className={item.kind === "merge" && item.unapproved ? "unapproved" : item.break_glass ? "override" : undefined}>
                  <th scope="row"><a href={`?id=${item.id}`}>{item.kind === "merge" ? "Merge" : item.kind === "merge_group" ? "Merge group" : "Decision"} {item.id}</a></th>
                  <td>{item.repository.full_name}</td>
                  <td>{item.kind === "merge_group" ? item.pull_requests.map((n) => `#${n}`).join(", ") : `#${item.pull_request}`}</td>
                  <td><code title={item.kind === "merge" && item.merge_commit_sha !== null ? item.merge_commit_sha : item.head_sha}>{short(item.kind === "merge" && item.merge_commit_sha !== null ? item.merge_commit_sha : item.head_sha)}</code></td>
                  <td><SummaryResult item={item} /></td>
                  <td><time dateTime={item.kind === "merge" ? item.recorded_at : item.published_at}>{item.kind === "merge" ? item.recorded_at : item.published_at}</time></td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {next !== null ? <button type="button" disabled={busy} onClick={() => void load(next)}>Older records</button> : null}
      </section>
    </>
  );
}

function FileRow(props: { role: string; file: RecordedFile | null; fullName: string | null; commit: string | null; at: string; web: string | null }) {
  const { file } = props;
  if (file === null) return <tr><th scope="row">{props.role}</th><td colSpan={3} className="muted">none read</td></tr>;
  const link = props.fullName === null ? null : blobUrl(props.web, props.fullName, props.commit, file.path);
  return (
    <tr>
      <th scope="row">{props.role}</th>
      <td>{link === null ? <code>{file.path}</code> : <a href={link} rel="noreferrer noopener"><code>{file.path}</code></a>}</td>
      <td>{props.at}{props.commit === null ? null : <> <code title={props.commit}>{short(props.commit)}</code></>}</td>
      <td>blob <Sha sha={file.blob_sha} /> ({file.bytes} bytes)</td>
    </tr>
  );
}

const RULES: Record<RecordedApproval["rule"], string> = {
  direct_owner: "as an owner",
  team_membership: "as a member of",
  app_delegation: "by the App delegation to",
  break_glass: "by break-glass override, team",
};

function Approval(props: { approval: RecordedApproval }) {
  const a = props.approval;
  return (
    <li>
      <strong>{a.reviewer_login}</strong> <span className="muted">(user {a.reviewer_id})</span> {RULES[a.rule]} <code>{a.via}</code>: review {a.review_id} on{" "}
      <code title={a.commit_id ?? ""}>{short(a.commit_id)}</code>{a.submitted_at === null ? null : <>, submitted <time dateTime={a.submitted_at}>{a.submitted_at}</time></>}
    </li>
  );
}

function PlaygroundHandoff(props: { record: DecisionRecord; settings: PageSettings }) {
  const [href, setHref] = useState<string | null>(null);
  const handoff: Handoff = handoffOf(props.record, props.settings.web);
  useEffect(() => {
    if (handoff.kind === "ready" && props.settings.playground) void playgroundHref(handoff.state).then(setHref);
  }, [props.record.id]);
  return (
    <section aria-labelledby="playground-heading">
      <h2 id="playground-heading">Open in playground</h2>
      {!props.settings.playground ? <p>The playground is not served here (SERVICE_PLAYGROUND_ENABLED=false).</p>
      : handoff.kind === "unavailable" ? <p>{handoff.why}</p>
      : (
        <>
          <p>
            The playground opens with this record's inputs: the pull request, changed files, reviews and directory facts as recorded. A record keeps files by
            blob SHA, never their contents, so {handoff.missing.length === 0 ? "no file is missing." : "these files open as placeholders that say so; paste each as it was at its commit, or run "}
            {handoff.missing.length === 0 ? null : <><code>service history replay {props.record.id} --json</code> and open that evidence document in the playground instead:</>}
          </p>
          {handoff.missing.length > 0 ? (
            <ul data-testid="missing-files">
              {handoff.missing.map((file) => (
                <li key={`${file.role}:${file.path}`}>{file.role} <Link href={file.link}><code>{file.path}</code></Link> (blob <code>{file.blobSha ?? "unknown"}</code>)</li>
              ))}
            </ul>
          ) : null}
          {href === null ? <p aria-live="polite">Preparing the link…</p> : <p><a className="button" href={href}>Open {props.record.id} in the playground</a></p>}
        </>
      )}
    </section>
  );
}

/**
 * The reason as shown: a record keeps at most 500 characters (RecordedBreakGlass), and the page holds to that bound itself
 * whatever the record says. React renders it as a text node (never markup); CSS keeps it inside a bounded, scrollable box.
 */
const MAX_SHOWN_REASON = 500;
function shownReason(reason: string): string {
  const characters = [...reason];
  return characters.length <= MAX_SHOWN_REASON ? reason : `${characters.slice(0, MAX_SHOWN_REASON).join("")}…`;
}

function Override(props: { override: RecordedBreakGlass; record: DecisionRecord }) {
  const { override, record } = props;
  // The indexes name owner sets of this record; one out of range is shown as such rather than dropped.
  const sets = override.unsatisfied_owner_sets;
  return (
    <section aria-labelledby="override-heading" className="notice warn-notice" data-testid="override">
      <h2 id="override-heading">Break-glass override</h2>
      <p>
        The approval requirements were met by an emergency override, not by the owners. It is bound to this head: a push or a
        dismissal of the review ends it.
      </p>
      <dl className="facts">
        <dt>Reviewer</dt><dd><strong>{override.reviewer_login}</strong> <span className="muted">(user {override.reviewer_id})</span></dd>
        <dt>Team</dt><dd><code>{override.team}</code></dd>
        <dt>Review</dt><dd>{override.review_id}</dd>
        <dt>Reason</dt>
        <dd>
          <blockquote className="reason-text" data-testid="override-reason" tabIndex={0} aria-label="Reason given">{shownReason(override.reason)}</blockquote>
        </dd>
        <dt>Owner sets its owners did not satisfy</dt>
        <dd>
          {sets.length === 0 ? "none" : (
            <ul className="unsatisfied-sets" data-testid="unsatisfied-sets">
              {sets.map((index) => {
                const set = record.owner_sets[index];
                return (
                  <li key={index}>
                    {set === undefined ? <>Owner set {index + 1} <span className="muted">(not in this record)</span></> : (
                      <><a href={`#owner-set-${index + 1}`}>Owner set {index + 1}</a>: {set.owners.map((owner) => <code key={owner} className="owner">{owner}</code>)}</>
                    )}
                  </li>
                );
              })}
            </ul>
          )}
        </dd>
      </dl>
    </section>
  );
}

function DecisionView(props: { record: DecisionRecord; settings: PageSettings }) {
  const { record, settings } = props;
  const web = settings.web;
  const full = record.repository.full_name;
  return (
    <article aria-labelledby="record-heading">
      <h1 id="record-heading">Decision {record.id}: <span className={record.conclusion === "success" ? "ok" : "bad"}>{record.conclusion}</span></h1>
      <p className="title">{record.title}</p>
      {record.confirmed ? null : (
        <p className="notice warn-notice" data-testid="unconfirmed">
          <strong>Unconfirmed.</strong> This record was written before the check write and never confirmed after it: the result may not have reached the forge.
        </p>
      )}
      {record.summarised === null ? null : (
        <p className="notice">Summarised to stay within the record's size bound: {record.summarised.omitted === "inputs" ? "the inputs were left out (it cannot be replayed)" : "the owner sets' paths were left out (it can still be replayed)"}.</p>
      )}
      <dl className="facts">
        <dt>Repository</dt><dd>{full} <span className="muted">(ID {record.repository.id})</span></dd>
        <dt>Pull request</dt><dd><Link href={pullUrl(web, full, record.pull_request)}>#{record.pull_request}</Link> (<a href={`?repository=${encodeURIComponent(full)}&pull=${record.pull_request}`}>all its records</a>)</dd>
        <dt>Head</dt><dd><Sha sha={record.head_sha} href={commitUrl(web, full, record.head_sha)} /></dd>
        <dt>Base</dt><dd><Sha sha={record.base_sha} href={commitUrl(web, full, record.base_sha)} /></dd>
        <dt>Check run</dt><dd>{record.check_run_id ?? "not known"}</dd>
        <dt>Published</dt><dd><time dateTime={record.published_at}>{record.published_at}</time></dd>
        <dt>Reasons</dt><dd>{record.reasons.length === 0 ? "none" : record.reasons.map((reason) => <code key={reason} className="reason">{reason}</code>)}</dd>
        <dt>Service</dt><dd>{record.service.version}{record.service.revision === null ? null : <> (<code>{record.service.revision}</code>)</>}</dd>
        <dt>Forge directory</dt><dd data-testid="forge-directory"><code>{record.settings?.forge_directory ?? DEFAULT_FORGE_DIRECTORY}</code>{record.settings?.forge_directory === undefined ? <span className="muted"> (recorded before the directory was a setting)</span> : null}</dd>
        <dt>Paths</dt><dd>{record.unowned_path_count} unowned, {record.non_delegable_path_count} non-delegable</dd>
      </dl>
      <section aria-labelledby="files-heading">
        <h2 id="files-heading">Files read</h2>
        <table className="files">
          <caption className="visually-hidden">The code-owners file and policies the decision read, by blob SHA</caption>
          <thead><tr><th scope="col">File</th><th scope="col">Path</th><th scope="col">Read at</th><th scope="col">Content</th></tr></thead>
          <tbody>
            <FileRow role="Code owners" file={record.codeowners} fullName={full} commit={record.base_sha} at="base commit" web={web} />
            <FileRow role="Repository policy" file={record.repository_policy} fullName={full} commit={record.base_sha} at="base commit" web={web} />
            <FileRow role="Organization policy" file={record.organization_policy} fullName={record.organization_policy?.repository ?? null} commit={record.organization_policy?.commit_sha ?? null} at={record.organization_policy === null ? "" : `${record.organization_policy.repository}${record.organization_policy.commit_sha === null ? " (commit not recorded)" : " at"}`} web={web} />
          </tbody>
        </table>
        {web === null ? <p className="hint">No forge web address is configured, so files are named by blob SHA only.</p> : null}
      </section>
      {record.break_glass === null ? null : <Override override={record.break_glass} record={record} />}
      <section aria-labelledby="sets-heading">
        <h2 id="sets-heading">Owner sets</h2>
        {record.owner_sets.length === 0 ? <p>No owner set: no changed path has owners.</p> : null}
        <ol className="owner-sets">
          {record.owner_sets.map((set, index) => (
            <li key={index} id={`owner-set-${index + 1}`} className={`owner-set ${set.status}`} data-testid="owner-set">
              <h3>Owner set {index + 1}: {set.status}, {set.approvals} of {set.required} approval{set.required === 1 ? "" : "s"}</h3>
              <p>Owners: {set.owners.map((owner) => <code key={owner} className="owner">{owner}</code>)}</p>
              <p>Patterns: {set.patterns.map((pattern) => <code key={pattern} className="owner">{pattern}</code>)} <span className="muted">({set.path_count} changed path{set.path_count === 1 ? "" : "s"})</span></p>
              {set.satisfied_by.length === 0 ? <p className="muted">No review satisfied it.</p> : (
                <>
                  <h4>Satisfied by</h4>
                  <ul>{set.satisfied_by.map((approval) => <Approval key={approval.review_id} approval={approval} />)}</ul>
                </>
              )}
              {set.paths.length > 0 ? (
                <details>
                  <summary>Changed paths</summary>
                  <ul className="paths">{set.paths.map((path) => <li key={path}><code>{path}</code></li>)}</ul>
                </details>
              ) : null}
            </li>
          ))}
        </ol>
      </section>
      <PlaygroundHandoff record={record} settings={settings} />
    </article>
  );
}

function MergeView(props: { record: MergeRecord; settings: PageSettings }) {
  const { record, settings } = props;
  const full = record.repository.full_name;
  return (
    <article aria-labelledby="record-heading">
      <h1 id="record-heading">Merge {record.id} of #{record.pull_request}</h1>
      {record.enrollment === "not_enrolled" ? (
        <p className="notice" data-testid="not-enrolled">
          <strong>Not enrolled.</strong> The repository policy at the base commit {record.base_sha ?? ""} does not enable the service, so this
          merge is not an unapproved merge.
        </p>
      ) : record.unapproved && record.reset_at !== null ? (
        <p className="notice unapproved-notice" data-testid="unapproved">
          <strong>Unapproved merge.</strong> The success {record.decision_id} was withdrawn: the service reset the check to in progress at{" "}
          {record.reset_at}, and the head merged before the next confirmed success: an administrator bypass, or the check was not required.
        </p>
      ) : record.unapproved ? (
        <p className="notice unapproved-notice" data-testid="unapproved">
          <strong>Unapproved merge.</strong> The head at merge had no confirmed success from the service
          {record.decision_id === null ? " (no decision was recorded for it)"
          : ` (its current decision, ${record.decision_id}, was ${record.decision_conclusion === "success" ? "a success never confirmed" : record.decision_conclusion ?? "not a success"})`}:
          an administrator bypass, or the check was not required.
        </p>
      ) : (
        <p className="notice ok-notice">Approved: the head at merge had a confirmed success.</p>
      )}
      {record.break_glass && record.unapproved ? (
        <p className="notice warn-notice" data-testid="merge-override">
          <strong>Break-glass override not confirmed.</strong> The decision current at merge
          {record.decision_id === null ? null : <> (<a href={`?id=${record.decision_id}`}>{record.decision_id}</a>)</>} carried a break-glass override, but it
          was not a confirmed success, so the override did not approve this merge.
        </p>
      ) : record.break_glass ? (
        <p className="notice warn-notice" data-testid="merge-override">
          <strong>Merged on a break-glass override.</strong> The head at merge was approved by an emergency override, not by its owners
          {record.decision_id === null ? "." : <>: decision <a href={`?id=${record.decision_id}`}>{record.decision_id}</a> names the reviewer, team and reason.</>}
        </p>
      ) : null}
      <dl className="facts">
        <dt>Repository</dt><dd>{full} <span className="muted">(ID {record.repository.id})</span></dd>
        <dt>Pull request</dt><dd><Link href={pullUrl(settings.web, full, record.pull_request)}>#{record.pull_request}</Link> (<a href={`?repository=${encodeURIComponent(full)}&pull=${record.pull_request}`}>all its records</a>)</dd>
        <dt>Merge commit</dt><dd><Sha sha={record.merge_commit_sha} href={commitUrl(settings.web, full, record.merge_commit_sha)} /></dd>
        <dt>Head at merge</dt><dd><Sha sha={record.head_sha} href={commitUrl(settings.web, full, record.head_sha)} /></dd>
        <dt>Merged by</dt><dd>{record.merged_by === null ? "not known" : <>{record.merged_by.login} <span className="muted">(user {record.merged_by.id})</span></>}</dd>
        <dt>Merged at</dt><dd>{record.merged_at === null ? "not known" : <time dateTime={record.merged_at}>{record.merged_at}</time>}</dd>
        <dt>Decision</dt><dd>{record.decision_id === null ? "none recorded for the head at merge" : <><a href={`?id=${record.decision_id}`}>{record.decision_id}</a> ({record.decision_conclusion})</>}</dd>
        {record.merge_group_id === undefined || record.merge_group_id === null ? null : (
          <><dt>Merge queue</dt><dd data-testid="merge-group-link">verified in merge group <a href={`?id=${record.merge_group_id}`}>{record.merge_group_id}</a></dd></>
        )}
        <dt>Recorded</dt><dd><time dateTime={record.recorded_at}>{record.recorded_at}</time>{record.recovered ? " (recovered by the reconciler: the closed delivery was missed)" : ""}</dd>
      </dl>
    </article>
  );
}

const MEMBER_SOURCE: Record<NonNullable<MergeGroupRecord["members"][number]["rule_source"]>, string> = {
  recorded: "approved under the rules it merges onto",
  reevaluated: "re-evaluated under the rules it merges onto",
};

function MergeGroupView(props: { record: MergeGroupRecord; settings: PageSettings }) {
  const { record, settings } = props;
  const full = record.repository.full_name;
  return (
    <article aria-labelledby="record-heading">
      <h1 id="record-heading">Merge group {record.id} into {record.base_ref}</h1>
      <p className={record.conclusion === "success" ? "notice ok-notice" : "notice unapproved-notice"} data-testid="group-verdict">
        <strong>{record.conclusion === "success" ? "Verified" : "Refused"}:</strong> {record.title}
      </p>
      <dl className="facts">
        <dt>Repository</dt><dd>{full} <span className="muted">(ID {record.repository.id})</span></dd>
        <dt>Group commit</dt><dd><Sha sha={record.head_sha} href={commitUrl(settings.web, full, record.head_sha)} /></dd>
        <dt>Parent commit</dt><dd><Sha sha={record.base_sha} href={commitUrl(settings.web, full, record.base_sha)} /></dd>
        <dt>Published</dt><dd><time dateTime={record.published_at}>{record.published_at}</time></dd>
      </dl>
      <table className="records" data-testid="group-members">
        <caption>Pull requests of the group, in queue order</caption>
        <thead><tr><th scope="col">Pull request</th><th scope="col">Head</th><th scope="col">Decision</th><th scope="col">Result</th></tr></thead>
        <tbody>
          {record.members.map((member) => (
            <tr key={member.pull_request} className={member.outcome === "refused" ? "unapproved" : undefined}>
              <th scope="row"><Link href={pullUrl(settings.web, full, member.pull_request)}>#{member.pull_request}</Link></th>
              <td><Sha sha={member.head_sha} href={commitUrl(settings.web, full, member.head_sha)} /></td>
              <td>{member.decision_id === null ? "none" : <a href={`?id=${member.decision_id}`}>{member.decision_id}</a>}</td>
              <td>
                {member.outcome === "passed"
                  ? <span className="ok">passed{member.rule_source === null ? "" : `: ${MEMBER_SOURCE[member.rule_source]}`}</span>
                  : <span className="bad">{member.outcome === "refused" ? "refused" : "not judged"}: {member.reason ?? "no reason recorded"}{member.changed_by === null ? "" : ` (rules changed by #${member.changed_by})`}</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </article>
  );
}

function RecordPage(props: { id: string; settings: PageSettings }) {
  const [record, setRecord] = useState<HistoryRecord | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    void readRecord(props.id).then((answer) => (answer.ok ? setRecord(answer.value) : setError(answer.error)));
  }, [props.id]);
  if (error !== null) return <><h1 id="record-heading">Record {props.id}</h1><Problem error={error} /></>;
  if (record === null) return <p aria-live="polite">Loading {props.id}…</p>;
  if (record.kind === "merge_group") return <MergeGroupView record={record} settings={props.settings} />;
  return record.kind === "decision" ? <DecisionView record={record} settings={props.settings} /> : <MergeView record={record} settings={props.settings} />;
}

export function App(props: { settings: PageSettings; search: string }) {
  const params = new URLSearchParams(props.search);
  const id = params.get("id");
  return (
    <>
      <header>
        <p className="brand"><a href="./">Decisions</a> <span className="muted">of the code-owner approval check</span></p>
        {props.settings.signedIn ? (
          <form className="session" data-testid="session" method="post" action="/auth/sign-out">Signed in as <strong>{props.settings.signedIn}</strong> · <button type="submit">Sign out</button></form>
        ) : null}
      </header>
      <main>
        {id !== null ? <RecordPage id={id} settings={props.settings} /> : (
          <>
            <h1>Decisions and merges</h1>
            <p className="hint">Every check the service completed and every merge it saw, newest first. Search by repository, pull request or commit.</p>
            <SearchPage params={params} />
          </>
        )}
      </main>
    </>
  );
}
