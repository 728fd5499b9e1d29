import { diffLines } from 'diff';
import { useState } from 'react';
import { Link } from 'react-router';
import settingsSchema from 'virtual:schema/EnterpriseSettings';
import type { Schemas } from '../../api/client';
import { useControlsHistory, useControlsRevision } from '../../api/controls';
import { EmptyState } from '../../components/EmptyState';
import { ErrorMessage } from '../../components/ErrorMessage';
import { Page } from '../../components/Page';
import { ShowMore } from '../../components/ShowMore';
import { formatTime } from '../../format';
import { pointerName, stableJson, type Json } from './settings-model';
import './controls.css';

type Change = Schemas['EnterpriseControlChange'];

/** `{app_url}/settings/controls/history`: every revision, newest first, with who and when, and what it changed beside what was before. */
export default function ControlsHistory() {
  const list = useControlsHistory();
  const [open, setOpen] = useState<number | null>(null);
  const changes = list.data?.pages.flatMap((page) => page.changes) ?? [];
  return (
    <Page
      title="Controls history"
      intro={
        <p>
          Every change to the <Link to="/settings/controls">enterprise controls</Link>, newest first: who made it, when, and what it changed.
        </p>
      }
    >
      {list.isPending ? (
        <p className="loading">Loading the history…</p>
      ) : !list.data ? (
        <ErrorMessage error={list.error} action="Reading the history" />
      ) : changes.length === 0 ? (
        <EmptyState title="The controls were never changed.">
          <p>
            Your organization runs on the defaults. <Link to="/settings/controls">Change a control</Link> and its revision appears here.
          </p>
        </EmptyState>
      ) : (
        <ol className="revisions">
          {changes.map((change) => (
            <li key={change.revision} className="revision">
              <div className="revision-head">
                <h2>Revision {change.revision}</h2>
                <p>
                  by <strong>{change.user.name}</strong> <span className="muted">({change.user.email})</span> on{' '}
                  <time dateTime={change.updatedAt}>{formatTime(Date.parse(change.updatedAt))}</time>
                </p>
                <button
                  type="button"
                  className="small"
                  aria-expanded={open === change.revision}
                  onClick={() => setOpen(open === change.revision ? null : change.revision)}
                >
                  {open === change.revision ? 'Hide changes' : 'Show changes'}
                  <span className="visually-hidden"> of revision {change.revision}</span>
                </button>
              </div>
              {open === change.revision ? <RevisionDiff change={change} /> : null}
            </li>
          ))}
        </ol>
      )}
      <ShowMore list={list} label="Show older revisions" errorAction="Reading older revisions" />
    </Page>
  );
}

/** The revision's own diff (the fields it names) and the two snapshots side by side, changed lines marked. */
function RevisionDiff({ change }: { change: Change }) {
  const current = useControlsRevision(change.revision);
  const previous = useControlsRevision(change.revision - 1, { enabled: change.revision > 1 });
  if (current.isPending || (change.revision > 1 && previous.isPending)) return <p className="loading">Loading the changes…</p>;
  if (!current.data) return <ErrorMessage error={current.error} action={`Reading revision ${change.revision}`} />;
  if (change.revision > 1 && !previous.data) return <ErrorMessage error={previous.error} action={`Reading revision ${change.revision - 1}`} />;
  // Revision 1 changed the defaults, which the settings schema publishes.
  const before = (change.revision > 1 ? previous.data!.settings : settingsSchema.schemas[settingsSchema.root].default) as Json;
  const beforeLabel = change.revision > 1 ? `Revision ${change.revision - 1}` : 'The defaults (revision 0)';
  return (
    <div className="revision-diff">
      <h3 className="small-heading">Changed fields</h3>
      <ul className="changed-fields">
        {fieldChanges(current.data.diff).map(({ verb, field, times }) => (
          <li key={`${verb}:${field}`}>
            <span className="op">{verb}</span> <code>{field}</code>
            {times > 1 ? ` (${times} times)` : null}
          </li>
        ))}
      </ul>
      <SideBySide
        before={stableJson(before)}
        after={stableJson(current.data.settings as Json)}
        beforeLabel={beforeLabel}
        afterLabel={`Revision ${change.revision}`}
      />
    </div>
  );
}

/** The diff's operations as readable lines, the same one repeated (entries appended to a list) counted once. */
function fieldChanges(diff: Schemas['JsonPatchOperation'][]): { verb: string; field: string; times: number }[] {
  const lines = new Map<string, { verb: string; field: string; times: number }>();
  for (const op of diff) {
    const verb = op.op === 'add' ? 'Added' : op.op === 'remove' ? 'Removed' : 'Changed';
    const field = pointerName(op.path);
    const line = lines.get(`${verb}:${field}`) ?? { verb, field, times: 0 };
    line.times++;
    lines.set(`${verb}:${field}`, line);
  }
  return [...lines.values()];
}

interface Row {
  kind: 'same' | 'changed' | 'gap';
  left?: { n: number; text: string; removed: boolean };
  right?: { n: number; text: string; added: boolean };
  hidden?: number;
}

const CONTEXT = 3;

/** A line diff (jsdiff) laid out in two columns; long unchanged stretches folded to a few lines of context. */
function SideBySide({ before, after, beforeLabel, afterLabel }: { before: string; after: string; beforeLabel: string; afterLabel: string }) {
  const rows: Row[] = [];
  let l = 1;
  let r = 1;
  const parts = diffLines(before, after);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    const lines = part.value.replace(/\n$/, '').split('\n');
    if (!part.added && !part.removed) {
      const all = lines.map((text) => ({ kind: 'same' as const, left: { n: l++, text, removed: false }, right: { n: r++, text, added: false } }));
      const head = i === 0 ? 0 : CONTEXT;
      const tail = i === parts.length - 1 ? 0 : CONTEXT;
      if (all.length > head + tail + 1) {
        rows.push(...all.slice(0, head), { kind: 'gap', hidden: all.length - head - tail }, ...all.slice(all.length - tail));
      } else rows.push(...all);
      continue;
    }
    // A removal followed by an addition: pair their lines side by side.
    const removed = part.removed ? lines : [];
    const added = part.removed && parts[i + 1]?.added ? parts[++i].value.replace(/\n$/, '').split('\n') : part.added ? lines : [];
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      rows.push({
        kind: 'changed',
        left: k < removed.length ? { n: l++, text: removed[k], removed: true } : undefined,
        right: k < added.length ? { n: r++, text: added[k], added: true } : undefined,
      });
    }
  }
  return (
    <div className="table-scroll" tabIndex={0} role="region" aria-label={`${beforeLabel} beside ${afterLabel}`}>
      <table className="diff-table">
        <caption className="visually-hidden">
          {beforeLabel} (left) and {afterLabel} (right), as JSON; removed and added lines are marked
        </caption>
        <thead>
          <tr>
            <th scope="col" colSpan={2}>
              {beforeLabel}
            </th>
            <th scope="col" colSpan={2}>
              {afterLabel}
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) =>
            row.kind === 'gap' ? (
              <tr key={i} className="diff-gap">
                <td colSpan={4}>… {row.hidden} unchanged lines …</td>
              </tr>
            ) : (
              <tr key={i}>
                <td className="diff-n">{row.left?.n ?? ''}</td>
                <td className={row.left?.removed ? 'diff-removed' : row.left ? '' : 'diff-empty'}>
                  {row.left?.removed ? <span className="visually-hidden">removed: </span> : null}
                  {row.left ? (
                    <span className="diff-mark" aria-hidden="true">
                      {row.left.removed ? '−' : ' '}
                    </span>
                  ) : null}
                  <code>{row.left?.text ?? ''}</code>
                </td>
                <td className="diff-n">{row.right?.n ?? ''}</td>
                <td className={row.right?.added ? 'diff-added' : row.right ? '' : 'diff-empty'}>
                  {row.right?.added ? <span className="visually-hidden">added: </span> : null}
                  {row.right ? (
                    <span className="diff-mark" aria-hidden="true">
                      {row.right.added ? '+' : ' '}
                    </span>
                  ) : null}
                  <code>{row.right?.text ?? ''}</code>
                </td>
              </tr>
            ),
          )}
        </tbody>
      </table>
    </div>
  );
}
