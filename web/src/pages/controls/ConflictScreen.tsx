import { useEffect, useRef } from 'react';
import { formatTime } from '../../format';
import type { Snapshot } from '../../api/controls';
import { applyMergePatch, equal, getAt, maskSecrets, mergePatch, patchedPaths, pathName, stableJson, type JsonObject, type Path } from './settings-model';

/** The value at `path` of `settings`, secrets masked. */
const short = (settings: JsonObject, path: Path) => {
  const value = getAt(settings, path);
  return value === undefined ? '(not set)' : stableJson(maskSecrets(value, path));
};

/**
 * Someone else saved first (412): nothing of ours was written. Theirs beside ours, field by field, and the choice: take
 * their revision and re-apply our changes on it (to review and save again), or drop ours.
 */
export function ConflictScreen(props: { base: Snapshot; theirs: Snapshot; patch: JsonObject; onReapply: (merged: JsonObject) => void; onDiscard: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const before = props.base.controls.settings as unknown as JsonObject;
  const theirs = props.theirs.controls.settings as unknown as JsonObject;
  const theirPaths = patchedPaths(mergePatch(before, theirs));
  const ourPaths = patchedPaths(props.patch);
  const keyOf = (path: readonly (string | number)[]) => pathName(path, '').replace(/^\./, '');
  const rows = [...new Map([...theirPaths, ...ourPaths].map((path) => [keyOf(path), path])).values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  const mine = applyMergePatch(before, props.patch) as JsonObject;
  const who = props.theirs.controls.user;
  return (
    <section className="conflict" aria-labelledby="conflict-title">
      <h2 id="conflict-title" ref={heading} tabIndex={-1}>
        Someone else saved first
      </h2>
      <p className="alert alert-warning">
        {who ? `${who.name} (${who.email})` : 'Someone'} saved revision {props.theirs.controls.revision}
        {props.theirs.controls.updatedAt ? ` on ${formatTime(Date.parse(props.theirs.controls.updatedAt))}` : ''} while you were editing revision{' '}
        {props.base.controls.revision}. <strong>Your changes were not saved</strong>, and theirs are untouched.
      </p>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Their changes and yours">
        <table className="table conflict-table">
          <caption>Fields changed since revision {props.base.controls.revision}</caption>
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Revision {props.base.controls.revision} (what you started from)</th>
              <th scope="col">Theirs (revision {props.theirs.controls.revision})</th>
              <th scope="col">Yours (not saved)</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((path) => {
              const both =
                theirPaths.some((p) => keyOf(p) === keyOf(path)) &&
                ourPaths.some((p) => keyOf(p) === keyOf(path)) &&
                !equal(getAt(theirs, path), getAt(mine, path));
              return (
                <tr key={keyOf(path)} className={both ? 'both-changed' : undefined}>
                  <th scope="row" data-label="Field">
                    <code>{keyOf(path)}</code>
                    {both ? <span className="badge">both changed</span> : null}
                  </th>
                  <td data-label="Before">
                    <pre>{short(before, path)}</pre>
                  </td>
                  <td data-label="Theirs">
                    <pre>{short(theirs, path)}</pre>
                  </td>
                  <td data-label="Yours">
                    <pre>{short(mine, path)}</pre>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <p>
        Re-applying puts your changes on top of revision {props.theirs.controls.revision} (where you both changed a field, yours) and takes you back to the form
        to review them; nothing is saved until you save again.
      </p>
      <div className="conflict-actions">
        <button type="button" className="primary" onClick={() => props.onReapply(applyMergePatch(theirs, props.patch) as JsonObject)}>
          Reload their revision and re-apply my changes
        </button>
        <button type="button" onClick={props.onDiscard}>
          Discard my changes
        </button>
      </div>
    </section>
  );
}
