import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useCreateWorkerPool, useWorkerPools, useWorkerPoolsLive, type WorkerPool } from '../api/worker-pools';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { LiveState } from '../components/LiveState';
import { Page } from '../components/Page';
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
          {list.hasNextPage ? (
            <button type="button" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>
              {list.isFetchingNextPage ? 'Loading…' : 'Show more pools'}
            </button>
          ) : null}
          {list.isFetchNextPageError ? <ErrorMessage error={list.error} action="Listing more pools" /> : null}
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
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [max, setMax] = useState('');
  const [allowUnsandboxed, setAllowUnsandboxed] = useState(false);
  const create = useCreateWorkerPool({ onSuccess: (pool) => void navigate(`/worker-pools/${pool.id}`) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({
      name: name.trim(),
      ...(description.trim() ? { description: description.trim() } : {}),
      ...(max.trim() ? { maxComputersPerWorker: Number(max) } : {}),
      allowUnsandboxed,
    });
  };
  return (
    <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a pool</h2>
      <PoolFields
        name={name}
        onName={setName}
        description={description}
        onDescription={setDescription}
        max={max}
        onMax={setMax}
        allowUnsandboxed={allowUnsandboxed}
        onAllowUnsandboxed={setAllowUnsandboxed}
      />
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create pool'}
      </button>
      <ErrorMessage error={create.error} action="Creating the pool" />
    </form>
  );
}

/** A pool's settings as fields: the create form's and the pool page's. */
export function PoolFields(props: {
  name: string;
  onName: (name: string) => void;
  description: string;
  onDescription: (description: string) => void;
  max: string;
  onMax: (max: string) => void;
  allowUnsandboxed: boolean;
  onAllowUnsandboxed: (allow: boolean) => void;
}) {
  const id = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          value={props.name}
          onChange={(event) => props.onName(event.target.value)}
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
        <input id={`${id}-description`} value={props.description} onChange={(event) => props.onDescription(event.target.value)} maxLength={500} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-max`}>Computers per worker (optional)</label>
        <input
          id={`${id}-max`}
          type="number"
          min={1}
          max={256}
          value={props.max}
          onChange={(event) => props.onMax(event.target.value)}
          aria-describedby={`${id}-max-hint`}
        />
        <p className="hint" id={`${id}-max-hint`}>
          1-256; blank: what each worker reports. Applies to workers registering from now on.
        </p>
      </div>
      <label className="checkbox">
        <input type="checkbox" checked={props.allowUnsandboxed} onChange={(event) => props.onAllowUnsandboxed(event.target.checked)} /> Allow workers without
        the sandbox
      </label>
    </>
  );
}
