import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import settingsSchema from 'virtual:schema/EnterpriseSettings';
import { ApiProblem, type Schemas } from '../../api/client';
import { readControls, useControls, useKeepControls, useSaveControls, type Snapshot } from '../../api/controls';
import { ErrorMessage } from '../../components/ErrorMessage';
import { Page } from '../../components/Page';
import { formatTime } from '../../format';
import { ConflictScreen } from './ConflictScreen';
import { McpSignIns } from './McpSignIns';
import { PluginsSection } from './PluginsSection';
import { fieldId, SchemaField, type FormContext } from './SchemaForm';
import { isObject, mergePatch, maskSecrets, pathName, setAt, stableJson, type Json, type JsonObject, type Path } from './settings-model';
import './controls.css';

type Controls = Schemas['EnterpriseControls'];

const settingsOf = (controls: Controls) => controls.settings as unknown as JsonObject;
/** The saved HTTP MCP servers' names: the ones an admin may sign in to. */
const httpMcpServersOf = (controls: Controls) => (controls.settings.mcpServers ?? []).flatMap((server) => (server.transport === 'http' ? [server.name] : []));
const pluginsOf = (settings: JsonObject): JsonObject => (isObject(settings.enabledPlugins) ? settings.enabledPlugins : {});

/** `{app_url}/settings/controls`: the enterprise controls as a form generated from the server's settings schema. */
export default function EnterpriseControls() {
  const read = useControls();
  return (
    <Page
      title="Enterprise controls"
      intro={
        <p>
          The organization&apos;s policy for agents, models, computers and keys. A save becomes a new revision, in force at once; see the{' '}
          <Link to="/settings/controls/history">history of changes</Link>.
        </p>
      }
    >
      {read.isPending ? (
        <p className="loading">Loading the controls…</p>
      ) : read.data ? (
        <>
          <ControlsEditor initial={read.data} />
          <McpSignIns servers={httpMcpServersOf(read.data.controls)} />
        </>
      ) : (
        <ErrorMessage error={read.error} action="Reading the controls" />
      )}
    </Page>
  );
}

function ControlsEditor({ initial }: { initial: Snapshot }) {
  const keepControls = useKeepControls();
  /** What the draft is based on: the revision read (its ETag goes in If-Match). */
  const [base, setBase] = useState(initial);
  const [draft, setDraft] = useState<JsonObject>(settingsOf(initial.controls));
  const [conflict, setConflict] = useState<{ theirs: Snapshot; patch: JsonObject } | null>(null);
  /** The revision just saved, and what the server warned of: settings of the change that have no effect on it. */
  const [saved, setSaved] = useState<{ revision: number; warnings: Array<{ field: string; message: string }> } | null>(null);
  /** Remounts the fields (their typed text) when the draft is replaced wholesale. */
  const [generation, setGeneration] = useState(0);
  const summary = useRef<HTMLDivElement>(null);

  const patch = useMemo(() => mergePatch(settingsOf(base.controls), draft), [base, draft]);
  const changed = Object.keys(patch).length > 0;

  const save = useSaveControls({
    onSuccess: (next) => {
      setBase(next);
      setDraft(settingsOf(next.controls));
      setGeneration((n) => n + 1);
      setSaved({ revision: next.controls.revision, warnings: next.controls.warnings ?? [] });
    },
    onError: async (error) => {
      if (error instanceof ApiProblem && (error.status === 412 || error.status === 409)) {
        // Someone else saved first: nothing of ours was written. Show theirs beside ours.
        try {
          setConflict({ theirs: await readControls(), patch });
        } catch {
          /* the error itself is shown */
        }
      }
    },
  });

  const errors = useMemo(() => {
    const map = new Map<string, string[]>();
    const problem = save.error instanceof ApiProblem && save.error.status === 400 ? save.error : null;
    const list = Array.isArray(problem?.metadata.errors) ? (problem.metadata.errors as { field?: unknown; message?: unknown }[]) : [];
    for (const { field, message } of list) if (typeof field === 'string' && typeof message === 'string') map.set(field, [...(map.get(field) ?? []), message]);
    return map;
  }, [save.error]);

  useEffect(() => {
    if (errors.size > 0) summary.current?.focus();
  }, [errors]);

  const ctx: FormContext = {
    schemas: settingsSchema.schemas,
    errors,
    onChange: (path: Path, next: Json | undefined) => {
      setSaved(null);
      setDraft((current) => (setAt(current, path, next) ?? {}) as JsonObject);
    },
  };
  const root = settingsSchema.schemas[settingsSchema.root];

  if (conflict) {
    return (
      <ConflictScreen
        base={base}
        theirs={conflict.theirs}
        patch={conflict.patch}
        onReapply={(merged) => {
          setBase(conflict.theirs);
          setDraft(merged);
          setGeneration((n) => n + 1);
          setConflict(null);
          save.reset();
          keepControls(conflict.theirs);
        }}
        onDiscard={() => {
          setBase(conflict.theirs);
          setDraft(settingsOf(conflict.theirs.controls));
          setGeneration((n) => n + 1);
          setConflict(null);
          save.reset();
          keepControls(conflict.theirs);
        }}
      />
    );
  }

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setSaved(null);
    save.mutate({ patch, etag: base.etag });
  };
  return (
    <form className="form controls-form" onSubmit={submit} noValidate aria-label="Enterprise controls">
      <p className="revision-line">
        {base.controls.revision === 0 ? (
          <>Revision 0: the defaults, never changed.</>
        ) : (
          <>
            Revision {base.controls.revision}, saved by {base.controls.user?.name} ({base.controls.user?.email}) on{' '}
            {formatTime(base.controls.updatedAt ? Date.parse(base.controls.updatedAt) : null)}.
          </>
        )}
      </p>
      <div ref={summary} tabIndex={-1} className="error-summary-anchor">
        {save.error && !(save.error instanceof ApiProblem && (save.error.status === 412 || save.error.status === 409)) ? (
          <ErrorMessage error={save.error} action="Saving the controls" />
        ) : null}
        {errors.size > 0 ? (
          <div className="alert alert-error">
            <p className="alert-title">Fix {errors.size === 1 ? 'this field' : `these ${errors.size} fields`}:</p>
            <ul>
              {[...errors].map(([field, messages]) => (
                <li key={field}>
                  <a href={`#${nearestField(field)}`} onClick={(event) => (event.preventDefault(), focusField(field))}>
                    {field.replace(/^settings\./, '')}
                  </a>
                  : {messages.join('; ')}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
      </div>
      <PluginsSection
        enabled={pluginsOf(draft)}
        saved={pluginsOf(settingsOf(base.controls))}
        onChange={(id, next) => ctx.onChange(['enabledPlugins', id], next)}
      />
      <div key={generation}>
        {Object.entries(root.properties ?? {}).map(([key, schema]) => (
          <SchemaField key={key} ctx={ctx} schema={schema} path={[key]} value={draft[key]} required={root.required?.includes(key)} />
        ))}
      </div>
      <details className="json-view">
        <summary>JSON view (read-only)</summary>
        <p className="hint">The settings as they will be after saving (secrets masked), and the JSON Merge Patch the save sends.</p>
        <h2 className="small-heading">Settings</h2>
        <pre tabIndex={0} aria-label="Settings as JSON">
          {stableJson(maskSecrets(draft))}
        </pre>
        <h2 className="small-heading">Change to send</h2>
        <pre tabIndex={0} aria-label="Change to send as JSON">
          {changed ? stableJson(maskSecrets(patch)) : '(no change)'}
        </pre>
      </details>
      <div className="save-bar">
        <button type="submit" className="primary" disabled={!changed || save.isPending}>
          {save.isPending ? 'Saving…' : 'Save controls'}
        </button>
        <button
          type="button"
          disabled={!changed || save.isPending}
          onClick={() => (setDraft(settingsOf(base.controls)), setGeneration((n) => n + 1), save.reset())}
        >
          Undo my changes
        </button>
        <p role="status" aria-live="polite" className="save-status">
          {saved !== null
            ? `Saved: revision ${saved.revision} is in force.`
            : changed
              ? `${countLeaves(patch)} unsaved change${countLeaves(patch) === 1 ? '' : 's'}.`
              : 'No unsaved changes.'}
        </p>
        {saved !== null && saved.warnings.length > 0 ? (
          <ul className="save-warnings" aria-label="Saved settings with no effect on this server">
            {saved.warnings.map((warning) => (
              <li key={warning.field}>{warning.message}</li>
            ))}
          </ul>
        ) : null}
      </div>
    </form>
  );
}

function countLeaves(patch: JsonObject): number {
  return Object.values(patch).reduce<number>(
    (sum, value) => sum + (typeof value === 'object' && value !== null && !Array.isArray(value) ? countLeaves(value) : 1),
    0,
  );
}

/** The element of the field the API names, or of the closest enclosing field that is on the page. */
function nearestField(field: string): string {
  let name = field;
  for (;;) {
    const segments = name
      .replace(/^settings\.?/, '')
      .split(/\.|\[(\d+)\]/)
      .filter((segment) => segment !== undefined && segment !== '')
      .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
    const id = fieldId(segments);
    if (document.getElementById(id) || segments.length === 0) return id;
    name = pathName(segments.slice(0, -1));
  }
}

function focusField(field: string): void {
  const element = document.getElementById(nearestField(field));
  element?.scrollIntoView({ block: 'center' });
  (element?.matches('input, select, textarea, button, output') ? element : element?.querySelector<HTMLElement>('input, select, textarea, button'))?.focus();
}
