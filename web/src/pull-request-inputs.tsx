// Pull-request inputs: the pull request's facts, its changed files (with renames) and its reviews in forge order.
import { memo } from "react";
import type { ChangedFile, Evidence, Review } from "../../server/evaluation/index.ts";
import { DraftInput, DraftTextArea, NumberInput } from "./draft-field.tsx";
import { formatFiles, parseFiles } from "./state.ts";

type Update = (update: (evidence: Evidence) => Evidence) => void;

const listLabels = (text: string) => text.split(",").map((label) => label.trim()).filter((label) => label !== "");
const numbers = (text: string) => [...new Set(text.split(/[\s,#]+/).filter((token) => /^\d+$/.test(token)).map(Number))];

export function PullRequestInputs({ evidence, update }: { evidence: Evidence; update: Update }) {
  const pr = evidence.pullRequest;
  const setPr = (patch: Partial<Evidence["pullRequest"]>) => update((e) => ({ ...e, pullRequest: { ...e.pullRequest, ...patch } }));
  const same = evidence.sameHeadPullRequests;
  const others = same.complete ? same.items.filter((other) => other.number !== pr.number && other.headSha === pr.headSha).map((other) => other.number) : [];
  const setOthers = (text: string) =>
    update((e) => ({
      ...e,
      sameHeadPullRequests: { complete: true, items: [{ number: e.pullRequest.number, headSha: e.pullRequest.headSha }, ...numbers(text).filter((n) => n !== e.pullRequest.number).map((number) => ({ number, headSha: e.pullRequest.headSha }))] },
    }));
  const listed = evidence.files.complete ? evidence.files.items.length : null;
  return (
    <div className="grid">
      <label>
        Repository
        <DraftInput label="Repository" value={`${evidence.repository.owner}/${evidence.repository.name}`} normalize={(t) => t} onChange={(text) => {
          const [owner = "", ...rest] = text.split("/");
          update((e) => ({ ...e, repository: { ...e.repository, owner, name: rest.join("/") } }));
        }} />
      </label>
      <label>
        Owned by
        <select value={evidence.repository.ownerType} onChange={(event) => update((e) => ({ ...e, repository: { ...e.repository, ownerType: event.target.value as "Organization" | "User" } }))}>
          <option value="Organization">an organization</option>
          <option value="User">a user</option>
        </select>
      </label>
      <label>
        Pull request number
        <NumberInput label="Pull request number" value={pr.number} onChange={(number) => update((e) => ({
          ...e,
          pullRequest: { ...e.pullRequest, number },
          sameHeadPullRequests: e.sameHeadPullRequests.complete ? { complete: true, items: e.sameHeadPullRequests.items.map((item) => (item.number === e.pullRequest.number ? { ...item, number } : item)) } : e.sameHeadPullRequests,
        }))} />
      </label>
      <label className="wide">
        Head commit
        <DraftInput label="Head commit" className="mono" value={pr.headSha} normalize={(t) => t.trim()} onChange={(text) => {
          const headSha = text.trim();
          update((e) => ({
            ...e,
            pullRequest: { ...e.pullRequest, headSha },
            // Reviews and same-head pull requests that were on the head follow it; older ones stay older.
            reviews: e.reviews.complete ? { complete: true, items: e.reviews.items.map((r) => (r.commitId === e.pullRequest.headSha ? { ...r, commitId: headSha } : r)) } : e.reviews,
            sameHeadPullRequests: e.sameHeadPullRequests.complete ? { complete: true, items: e.sameHeadPullRequests.items.map((p) => (p.headSha === e.pullRequest.headSha ? { ...p, headSha } : p)) } : e.sameHeadPullRequests,
          }));
        }} />
      </label>
      <label>
        Author login
        <DraftInput label="Author login" value={pr.author.login} normalize={(t) => t.trim()} onChange={(text) => setPr({ author: { ...pr.author, login: text.trim() } })} />
      </label>
      <label>
        Author user ID
        <NumberInput label="Author user ID" value={pr.author.id} onChange={(id) => setPr({ author: { ...pr.author, id } })} />
      </label>
      <label className="wide">
        Labels (comma-separated)
        <DraftInput label="Labels" value={pr.labels.join(", ")} normalize={(t) => listLabels(t).join(", ")} onChange={(text) => setPr({ labels: listLabels(text) })} />
      </label>
      <label>
        changed_files
        <NumberInput label="changed_files" value={pr.changedFiles} onChange={(changedFiles) => setPr({ changedFiles })} />
        {listed !== null && listed !== pr.changedFiles ? (
          <button type="button" className="link" onClick={() => setPr({ changedFiles: listed })}>
            set to the {listed} listed
          </button>
        ) : null}
      </label>
      <label className="wide">
        Other open pull requests on this head
        <DraftInput label="Other open pull requests on this head" placeholder="none" value={others.join(", ")} normalize={(t) => numbers(t).filter((n) => n !== pr.number).join(", ")} onChange={setOthers} />
        {!same.complete ? <span className="warn">listing incomplete: {same.detail}</span> : null}
      </label>
    </div>
  );
}

type Props = { evidence: Evidence; update: Update };

// Memoised on the fields they show: a keystroke in the CODEOWNERS editor must not re-render 3,000 file lines.
export const FilesInput = memo(FilesInputView, (a: Props, b: Props) => a.evidence.files === b.evidence.files && a.update === b.update);
export const ReviewsInput = memo(ReviewsInputView, (a: Props, b: Props) => a.evidence.reviews === b.evidence.reviews && a.evidence.pullRequest.headSha === b.evidence.pullRequest.headSha && a.update === b.update);

function FilesInputView({ evidence, update }: Props) {
  const files = evidence.files;
  if (!files.complete) {
    return (
      <p className="warn">
        The file listing is incomplete ({files.cause}: {files.detail}).{" "}
        <button type="button" onClick={() => update((e) => ({ ...e, files: { complete: true, items: [] } }))}>Replace with an empty complete list</button>
      </p>
    );
  }
  const setFiles = (text: string) =>
    update((e) => {
      const items: ChangedFile[] = parseFiles(text);
      const follows = e.files.complete && e.files.items.length === e.pullRequest.changedFiles;
      return { ...e, files: { complete: true, items }, pullRequest: follows ? { ...e.pullRequest, changedFiles: items.length } : e.pullRequest };
    });
  return (
    <>
      <DraftTextArea id="files" label="Changed files" rows={Math.min(12, Math.max(4, files.items.length + 1))} value={formatFiles(files.items)} normalize={(t) => formatFiles(parseFiles(t))} onChange={setFiles} />
      <p className="hint">
        One file a line: <code>modified src/app.ts</code>, <code>added …</code>, <code>removed …</code>, <code>renamed old/path -&gt; new/path</code>. {files.items.length} listed.
      </p>
    </>
  );
}

const REVIEW_STATES = ["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"];
const OLDER_COMMIT = "0123456789abcdef0123456789abcdef01234567";

function ReviewsInputView({ evidence, update }: Props) {
  const reviews = evidence.reviews;
  if (!reviews.complete) {
    return (
      <p className="warn">
        The review listing is incomplete ({reviews.cause}: {reviews.detail}).{" "}
        <button type="button" onClick={() => update((e) => ({ ...e, reviews: { complete: true, items: [] } }))}>Replace with an empty complete list</button>
      </p>
    );
  }
  const head = evidence.pullRequest.headSha;
  const older = head === OLDER_COMMIT ? "f".repeat(40) : OLDER_COMMIT;
  const set = (items: Review[]) => update((e) => ({ ...e, reviews: { complete: true, items } }));
  const items = reviews.items;
  const patch = (index: number, change: Partial<Review>) => set(items.map((r, i) => (i === index ? { ...r, ...change } : r)));
  const patchUser = (index: number, change: Partial<NonNullable<Review["user"]>>) => {
    const user = items[index]!.user ?? { id: 0, login: "", type: "User" };
    patch(index, { user: { ...user, ...change } });
  };
  const move = (index: number, by: number) => {
    const next = [...items];
    const [moved] = next.splice(index, 1);
    next.splice(index + by, 0, moved!);
    set(next);
  };
  const nextId = items.reduce((max, r) => Math.max(max, r.id), 0) + 1;
  return (
    <>
      <div className="table-scroll">
      <table className="edit-table">
        <caption className="visually-hidden">Reviews, oldest first</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Reviewer</th>
            <th scope="col">Account</th>
            <th scope="col">User ID</th>
            <th scope="col">State</th>
            <th scope="col">Commit</th>
            <th scope="col">Body (first line)</th>
            <th scope="col"><span className="visually-hidden">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {items.map((review, index) => {
            const name = review.user?.login ?? "(deleted user)";
            const commitChoice = review.commitId === head ? "head" : review.commitId === null ? "none" : review.commitId === older ? "older" : "other";
            return (
              <tr key={review.id}>
                <td>{index + 1}</td>
                <td>
                  <DraftInput label={`Reviewer ${index + 1} login`} value={review.user?.login ?? ""} normalize={(t) => t.trim()} onChange={(text) => patchUser(index, { login: text.trim() })} />
                </td>
                <td>
                  <select aria-label={`Reviewer ${index + 1} account`} value={review.user?.type ?? "User"} onChange={(event) => patchUser(index, { type: event.target.value })}>
                    <option value="User">person</option>
                    <option value="Bot">App bot</option>
                  </select>
                </td>
                <td>
                  <NumberInput label={`Reviewer ${index + 1} user ID`} className="narrow" value={review.user?.id ?? 0} onChange={(id) => patchUser(index, { id })} />
                </td>
                <td>
                  <select aria-label={`Review ${index + 1} state`} value={review.state} onChange={(event) => patch(index, { state: event.target.value })}>
                    {REVIEW_STATES.map((state) => (
                      <option key={state} value={state}>{state.toLowerCase().replace("_", " ")}</option>
                    ))}
                  </select>
                </td>
                <td>
                  <select
                    aria-label={`Review ${index + 1} commit`}
                    value={commitChoice}
                    onChange={(event) => patch(index, { commitId: event.target.value === "head" ? head : event.target.value === "older" ? older : event.target.value === "none" ? null : review.commitId })}
                  >
                    <option value="head">current head</option>
                    <option value="older">an older commit</option>
                    {commitChoice === "other" ? <option value="other">{review.commitId!.slice(0, 7)}</option> : null}
                    <option value="none">not reported</option>
                  </select>
                </td>
                <td>
                  <DraftInput label={`Review ${index + 1} body, first line`} placeholder="break-glass: reason" value={review.bodyFirstLine ?? ""} normalize={(t) => t} onChange={(text) => patch(index, { bodyFirstLine: text })} />
                </td>
                <td className="actions">
                  <button type="button" aria-label={`Move review by ${name} up`} disabled={index === 0} onClick={() => move(index, -1)}>↑</button>
                  <button type="button" aria-label={`Move review by ${name} down`} disabled={index === items.length - 1} onClick={() => move(index, 1)}>↓</button>
                  <button type="button" aria-label={`Remove review by ${name}`} onClick={() => set(items.filter((_, i) => i !== index))}>✕</button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      </div>
      <button type="button" onClick={() => set([...items, { id: nextId, user: { id: 200 + nextId, login: `reviewer${nextId}`, type: "User" }, state: "APPROVED", commitId: head }])}>
        Add a review
      </button>
    </>
  );
}
