import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useCreateWorkerPool, useWorkerPools, useWorkerPoolsLive, type WorkerPool } from '../api/worker-pools';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { LiveState } from '../components/LiveState';
import { Page } from '../components/Page';
import { ShowMore } from '../components/ShowMore';
import { formatTime } from '../format';
import '../fleet.css';

/** `{app_url}/worker-pools` (owners and managers): the organization's worker pools, and a new one. */
export default function WorkerPools() {
  const list = useWorkerPools();
  const live = useWorkerPoolsLive();
  const pools = list.data?.pages.flatMap((page) => page.workerPools) ?? [];
  return (
    <Page
      title="Worker pools"
      intro={
        <p>
          A worker pool is a group of machines running <code>agent-platform worker</code> that managed computers are placed on instead of this server. Make a
          pool, then an enrollment token for its workers.
        </p>
      }
    >
      <CreatePool />
      <h2>Pools</h2>
      <LiveState state={live} />
      {list.isPending ? (
        <p className="loading">Loading pools…</p>
      ) : !list.data ? (
        <ErrorMessage error={list.error} action="Listing the pools" />
      ) : pools.length === 0 ? (
        <EmptyState title="No worker pools yet.">
          <p>Create one above; its page then gives the enrollment token and the command to run on each worker.</p>
        </EmptyState>
      ) : (
        <>
          <PoolTable pools={pools} />
          <ShowMore list={list} label="Show more pools" errorAction="Listing more pools" />
        </>
      )}
    </Page>
  );
}

function PoolTable({ pools }: { pools: WorkerPool[] }) {
  return (
    <table className="table pools">
      <caption className="visually-hidden">Worker pools</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Description</th>
          <th scope="col">Computers per worker</th>
          <th scope="col">Unsandboxed workers</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {pools.map((pool) => (
          <tr key={pool.id}>
            <th scope="row" data-label="Name">
              <Link to={`/worker-pools/${pool.id}`}>{pool.name}</Link>
            </th>
            <td data-label="Description">{pool.description ?? <span className="muted">—</span>}</td>
            <td data-label="Computers per worker">{pool.maxComputersPerWorker ?? 'As each worker reports'}</td>
            <td data-label="Unsandboxed workers">{pool.allowUnsandboxed ? 'Allowed' : 'Refused'}</td>
            <td data-label="Created">{formatTime(pool.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function CreatePool() {
  const id = useId();
  const navigate = useNavigate();
  const [draft, setDraft] = useState(() => poolDraft());
  const create = useCreateWorkerPool({ onSuccess: (pool) => void navigate(`/worker-pools/${pool.id}`) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({
      name: draft.name.trim(),
      ...(draft.description.trim() ? { description: draft.description.trim() } : {}),
      ...(draft.max.trim() ? { maxComputersPerWorker: Number(draft.max) } : {}),
      allowUnsandboxed: draft.allowUnsandboxed,
    });
  };
  return (
    <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a pool</h2>
      <PoolFields value={draft} onChange={setDraft} />
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create pool'}
      </button>
      <ErrorMessage error={create.error} action="Creating the pool" />
    </form>
  );
}

/** A pool's settings as the form holds them: as typed, trimmed and parsed on submit. */
export interface PoolDraft {
  name: string;
  description: string;
  /** Computers per worker; blank: what each worker reports. */
  max: string;
  allowUnsandboxed: boolean;
}

/** A new pool's draft, or an existing pool's settings to edit. */
export function poolDraft(pool?: WorkerPool): PoolDraft {
  return {
    name: pool?.name ?? '',
    description: pool?.description ?? '',
    max: pool && pool.maxComputersPerWorker !== null ? String(pool.maxComputersPerWorker) : '',
    allowUnsandboxed: pool?.allowUnsandboxed ?? false,
  };
}

/** A pool's settings as fields: the create form's and the pool page's. */
export function PoolFields({ value, onChange }: { value: PoolDraft; onChange: (value: PoolDraft) => void }) {
  const id = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          value={value.name}
          onChange={(event) => onChange({ ...value, name: event.target.value })}
          maxLength={63}
          required
          spellCheck={false}
          placeholder="gpu-lab"
          aria-describedby={`${id}-name-hint`}
        />
        <p className="hint" id={`${id}-name-hint`}>
          Lower-case letters, digits and -; computers name their pool by it.
        </p>
      </div>
      <div className="field">
        <label htmlFor={`${id}-description`}>Description (optional)</label>
        <input
          id={`${id}-description`}
          value={value.description}
          onChange={(event) => onChange({ ...value, description: event.target.value })}
          maxLength={500}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-max`}>Computers per worker (optional)</label>
        <input
          id={`${id}-max`}
          type="number"
          min={1}
          max={256}
          value={value.max}
          onChange={(event) => onChange({ ...value, max: event.target.value })}
          aria-describedby={`${id}-max-hint`}
        />
        <p className="hint" id={`${id}-max-hint`}>
          1-256; blank: what each worker reports. Applies to workers registering from now on.
        </p>
      </div>
      <label className="checkbox">
        <input type="checkbox" checked={value.allowUnsandboxed} onChange={(event) => onChange({ ...value, allowUnsandboxed: event.target.checked })} /> Allow
        workers without the sandbox
      </label>
    </>
  );
}
