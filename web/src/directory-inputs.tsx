// Directory facts, revalidated by the engine at each evaluation: user permissions and organization memberships, teams
// (visibility, repository write access, memberships) and Apps (ID by slug, bot account ID). Each value can also be a 404
// (not eligible) or incomplete, exactly as the fetcher would record it.
import type { DirectoryFacts, Evidence, Lookup, LookupPlan } from "../../server/evaluation/index.ts";
import { memo, useState } from "react";
import { DraftInput, NumberInput } from "./draft-field.tsx";
import { formatMemberships, lookupFromWord, lookupWord, ownEntry, parseMemberships, withEntry } from "./state.ts";

type Update = (update: (evidence: Evidence) => Evidence) => void;

const PERMISSIONS = ["admin", "maintain", "write", "triage", "read", "none"];
const MEMBERSHIP = ["active", "pending"];
const SPECIAL = [
  ["404", "404 (not found)"],
  ["incomplete", "incomplete"],
  ["", "not looked up"],
] as const;

function LookupSelect(props: { label: string; word: string; values: readonly string[]; onChange: (word: string) => void }) {
  return (
    <select aria-label={props.label} value={props.word} onChange={(event) => props.onChange(event.target.value)}>
      {props.values.map((value) => (
        <option key={value} value={value}>{value}</option>
      ))}
      {SPECIAL.map(([value, text]) => (
        <option key={value} value={value}>{text}</option>
      ))}
    </select>
  );
}

function rename<T>(record: Readonly<Record<string, T>>, from: string, to: string): Record<string, T> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key === from ? to : key, value]));
}

const NOT_FOUND = { kind: "not_found" } as const;

/** `record` with a 404 appended for each of `keys` it lacks (compared case-insensitively, as the engine does). */
function withNotFound<T>(record: Readonly<Record<string, Lookup<T>>>, keys: readonly string[]): Record<string, Lookup<T>> {
  const present = new Set(Object.keys(record).map((key) => key.toLowerCase()));
  const entries: [string, Lookup<T>][] = Object.entries(record);
  for (const key of keys) {
    if (present.has(key.toLowerCase())) continue;
    present.add(key.toLowerCase());
    entries.push([key, NOT_FOUND]);
  }
  return Object.fromEntries(entries);
}

/** Adds every fact planLookups() says the evaluation reads and the evidence lacks, as a 404 (not eligible) to edit. */
export function addMissingFacts(evidence: Evidence, plan: LookupPlan): Evidence {
  const d = evidence.directory;
  let teams = d.teams;
  for (const { team, members } of plan.teams) {
    const key = Object.keys(teams).find((name) => name.toLowerCase() === team.toLowerCase()) ?? team;
    const facts = ownEntry(teams, key) ?? { memberships: {} };
    // The team's own facts too (a document from the service may lack them: not looked up for a reviewer who is no member).
    teams = withEntry(teams, key, { team: facts.team ?? NOT_FOUND, repository: facts.repository ?? NOT_FOUND, memberships: withNotFound(facts.memberships, members) });
  }
  return {
    ...evidence,
    directory: {
      collaborators: withNotFound(d.collaborators, plan.collaborators),
      organizationMemberships: withNotFound(d.organizationMemberships, plan.organizationMemberships),
      teams,
      apps: withNotFound(d.apps, plan.apps),
      botUsers: withNotFound(d.botUsers, plan.botUsers),
    },
  };
}

type Props = { evidence: Evidence; plan: LookupPlan | null; update: Update };

export const DirectoryInputs = memo(
  DirectoryInputsView,
  (a: Props, b: Props) => a.evidence.directory === b.evidence.directory && a.evidence.repository === b.evidence.repository && a.plan === b.plan && a.update === b.update,
);

function DirectoryInputsView({ evidence, plan, update }: Props) {
  const d = evidence.directory;
  const setDirectory = (change: (directory: DirectoryFacts) => DirectoryFacts) => update((e) => ({ ...e, directory: change(e.directory) }));
  const users = [...new Set([...Object.keys(d.collaborators), ...Object.keys(d.organizationMemberships)])];
  const appSlugs = [...new Set([...Object.keys(d.apps), ...Object.keys(d.botUsers).map((login) => login.replace(/\[bot\]$/, ""))])];
  const nextName = (taken: readonly string[], base: string) => {
    let n = 1;
    while (taken.includes(`${base}${n}`)) n++;
    return `${base}${n}`;
  };
  return (
    <>
      <h4>People</h4>
      <table className="edit-table">
        <caption className="visually-hidden">Repository permission and organization membership by login</caption>
        <thead>
          <tr><th scope="col">Login</th><th scope="col">Repository permission</th><th scope="col">Organization membership</th><th scope="col"><span className="visually-hidden">Actions</span></th></tr>
        </thead>
        <tbody>
          {users.map((login) => (
            <tr key={login}>
              <td><DraftInput label={`Login ${login}`} value={login} normalize={(t) => t.trim()} onChange={(text) => {
                const to = text.trim();
                if (to === "" || (to !== login && users.includes(to))) return;
                setDirectory((x) => ({ ...x, collaborators: rename(x.collaborators, login, to), organizationMemberships: rename(x.organizationMemberships, login, to) }));
              }} /></td>
              <td><LookupSelect label={`Repository permission of ${login}`} values={PERMISSIONS} word={lookupWord(ownEntry(d.collaborators, login), (v) => v.permission)} onChange={(word) => setDirectory((x) => ({ ...x, collaborators: withEntry(x.collaborators, login, lookupFromWord(word, (permission) => ({ permission }))) }))} /></td>
              <td><LookupSelect label={`Organization membership of ${login}`} values={MEMBERSHIP} word={lookupWord(ownEntry(d.organizationMemberships, login), (v) => v.state)} onChange={(word) => setDirectory((x) => ({ ...x, organizationMemberships: withEntry(x.organizationMemberships, login, lookupFromWord(word, (state) => ({ state }))) }))} /></td>
              <td className="actions"><button type="button" aria-label={`Remove ${login}`} onClick={() => setDirectory((x) => ({ ...x, collaborators: withEntry(x.collaborators, login, undefined), organizationMemberships: withEntry(x.organizationMemberships, login, undefined) }))}>✕</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" onClick={() => {
        const login = nextName(users, "user");
        setDirectory((x) => ({ ...x, collaborators: { ...x.collaborators, [login]: { kind: "found", value: { permission: "write" } } }, organizationMemberships: { ...x.organizationMemberships, [login]: { kind: "found", value: { state: "active" } } } }));
      }}>Add a person</button>

      <h4>Teams</h4>
      <table className="edit-table">
        <caption className="visually-hidden">Teams: visibility, repository access and memberships</caption>
        <thead>
          <tr><th scope="col">Team (org/slug)</th><th scope="col">Visibility</th><th scope="col">Write access</th><th scope="col">Members (<code>login</code> active, <code>login:pending</code>, <code>login:404</code>)</th><th scope="col"><span className="visually-hidden">Actions</span></th></tr>
        </thead>
        <tbody>
          {Object.entries(d.teams).map(([team, facts]) => (
            <tr key={team}>
              <td><DraftInput label={`Team ${team}`} value={team} normalize={(t) => t.trim()} onChange={(text) => {
                const to = text.trim().replace(/^@/, "");
                if (to === "" || (to !== team && Object.hasOwn(d.teams, to))) return;
                setDirectory((x) => ({ ...x, teams: rename(x.teams, team, to) }));
              }} /></td>
              <td><LookupSelect label={`Visibility of ${team}`} values={["closed", "secret"]} word={lookupWord(facts.team, (v) => v.privacy)} onChange={(word) => setDirectory((x) => ({ ...x, teams: { ...x.teams, [team]: { ...facts, team: lookupFromWord(word, (privacy) => ({ privacy })) ?? { kind: "not_found" } } } }))} /></td>
              <td><LookupSelect label={`Write access of ${team}`} values={["yes", "no"]} word={lookupWord(facts.repository, (v) => (v.push ? "yes" : "no"))} onChange={(word) => setDirectory((x) => ({ ...x, teams: { ...x.teams, [team]: { ...facts, repository: lookupFromWord(word, (push) => ({ push: push === "yes" })) ?? { kind: "not_found" } } } }))} /></td>
              <td><DraftInput label={`Members of ${team}`} className="wide-input" value={formatMemberships(facts.memberships)} normalize={(t) => formatMemberships(parseMemberships(t))} onChange={(text) => setDirectory((x) => ({ ...x, teams: { ...x.teams, [team]: { ...facts, memberships: parseMemberships(text) } } }))} /></td>
              <td className="actions"><button type="button" aria-label={`Remove team ${team}`} onClick={() => setDirectory((x) => ({ ...x, teams: withEntry(x.teams, team, undefined) }))}>✕</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" onClick={() => {
        const team = nextName(Object.keys(d.teams), `${evidence.repository.owner}/team`);
        setDirectory((x) => ({ ...x, teams: { ...x.teams, [team]: { team: { kind: "found", value: { privacy: "closed" } }, repository: { kind: "found", value: { push: true } }, memberships: {} } } }));
      }}>Add a team</button>

      <h4>Apps</h4>
      <table className="edit-table">
        <caption className="visually-hidden">Apps by slug: App ID and bot account user ID</caption>
        <thead>
          <tr><th scope="col">Slug</th><th scope="col">App (GET /apps/slug)</th><th scope="col">App ID</th><th scope="col">Bot account</th><th scope="col">Bot user ID</th><th scope="col"><span className="visually-hidden">Actions</span></th></tr>
        </thead>
        <tbody>
          {appSlugs.map((slug) => {
            const bot = `${slug}[bot]`;
            const app = ownEntry(d.apps, slug);
            const user = ownEntry(d.botUsers, bot);
            const appWord = lookupWord(app, () => "found");
            const userWord = lookupWord(user, () => "found");
            const setApp = (lookup: Lookup<{ id: number; slug: string }> | undefined) => setDirectory((x) => ({ ...x, apps: withEntry(x.apps, slug, lookup) }));
            const setBot = (lookup: Lookup<{ id: number; login: string; type: string }> | undefined) => setDirectory((x) => ({ ...x, botUsers: withEntry(x.botUsers, bot, lookup) }));
            return (
              <tr key={slug}>
                <td><code>{slug}</code></td>
                <td><LookupSelect label={`App ${slug}`} values={["found"]} word={appWord} onChange={(word) => setApp(lookupFromWord(word, () => ({ id: app?.kind === "found" ? app.value.id : 1, slug })))} /></td>
                <td>{app?.kind === "found" ? <NumberInput label={`App ID of ${slug}`} className="narrow" value={app.value.id} onChange={(id) => setApp({ kind: "found", value: { ...app.value, id } })} /> : "–"}</td>
                <td><LookupSelect label={`Bot account ${bot}`} values={["found"]} word={userWord} onChange={(word) => setBot(lookupFromWord(word, () => ({ id: user?.kind === "found" ? user.value.id : 1, login: bot, type: "Bot" })))} /></td>
                <td>{user?.kind === "found" ? <NumberInput label={`Bot user ID of ${slug}`} className="narrow" value={user.value.id} onChange={(id) => setBot({ kind: "found", value: { ...user.value, id } })} /> : "–"}</td>
                <td className="actions"><button type="button" aria-label={`Remove App ${slug}`} onClick={() => setDirectory((x) => ({ ...x, apps: withEntry(x.apps, slug, undefined), botUsers: withEntry(x.botUsers, bot, undefined) }))}>✕</button></td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <AddApp onAdd={(slug) => setDirectory((x) => ({
        ...x,
        apps: { ...x.apps, [slug]: { kind: "found", value: { id: 1, slug } } },
        botUsers: { ...x.botUsers, [`${slug}[bot]`]: { kind: "found", value: { id: 1, login: `${slug}[bot]`, type: "Bot" } } },
      }))} />
      {plan !== null ? (
        <button type="button" onClick={() => update((e) => addMissingFacts(e, plan))}>Add the facts this evaluation still needs (as 404)</button>
      ) : (
        <p className="hint">Every directory fact this evaluation reads is present.</p>
      )}
    </>
  );
}

function AddApp({ onAdd }: { onAdd: (slug: string) => void }) {
  const [slug, setSlug] = useState("");
  const valid = /^[a-z0-9][a-z0-9-]{0,99}$/.test(slug);
  return (
    <div className="row">
      <input type="text" aria-label="New App slug" placeholder="app-slug" value={slug} onChange={(event) => setSlug(event.target.value.trim())} />
      <button type="button" disabled={!valid} onClick={() => { onAdd(slug); setSlug(""); }}>Add an App</button>
    </div>
  );
}
