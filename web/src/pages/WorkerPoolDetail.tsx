import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiProblem } from '../api/client';
import {
  useCreateEnrollmentToken,
  useDeleteWorkerPool,
  useEnrollmentTokens,
  useEvictWorker,
  useRevokeEnrollmentToken,
  useUpdateWorkerPool,
  useWorkerPool,
  useWorkerPoolsLive,
  useWorkers,
  type CreatedEnrollmentToken,
  type EnrollmentToken,
  type Worker,
  type WorkerPool,
} from '../api/worker-pools';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CredentialTable } from '../components/CredentialTable';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { LiveState } from '../components/LiveState';
import { OneTimeSecret } from '../components/OneTimeSecret';
import { Page } from '../components/Page';
import { RevokeCredentialDialog } from '../components/RevokeCredentialDialog';
import { ShowMore } from '../components/ShowMore';
import { ActionsHeader, DangerRowAction } from '../components/TableActions';
import { formatTime } from '../format';
import { PoolFields, poolDraft } from './WorkerPools';
import '../fleet.css';

const WORKER_STATUS: Record<Worker['status'], string> = { online: 'Online', left: 'Left', lost: 'Lost', revoked: 'Revoked', evicted: 'Evicted' };
const TOKEN_FILE = '/etc/agent-platform/worker-token';

/**
 * `{app_url}/worker-pools/:poolId` (owners and managers): one pool's workers (evict), its enrollment tokens (create:
 * shown once with the worker's command; revoke), its settings, delete.
 */
export default function WorkerPoolDetail() {
  const { poolId = '' } = useParams();
  const pool = useWorkerPool(poolId);
  const live = useWorkerPoolsLive(poolId);
  if (pool.isPending)
    return (
      <Page title="Worker pool">
        <p className="loading">Loading the pool…</p>
      </Page>
    );
  if (!pool.data) {
    const gone = pool.error instanceof ApiProblem && pool.error.status === 404;
    return (
      <Page title="Worker pool">
        <ErrorMessage error={pool.error} action="Reading the pool" />
        {gone ? <p>It was deleted, or it is another organization’s.</p> : null}
        <p>
          <Link to="/worker-pools">Back to the worker pools</Link>
        </p>
      </Page>
    );
  }
  const p = pool.data;
  return (
    <Page
      title={`Pool ${p.name}`}
      intro={
        <>
          <p>
            <Link to="/worker-pools">Worker pools</Link> › {p.name}
          </p>
          {p.description ? <p>{p.description}</p> : null}
        </>
      }
    >
      <LiveState state={live} />
      <Workers pool={p} />
      <Tokens pool={p} />
      <Settings key={p.id} pool={p} />
      <DeletePool pool={p} />
    </Page>
  );
}

function Workers({ pool }: { pool: WorkerPool }) {
  const list = useWorkers(pool.id);
  const [evicting, setEvicting] = useState<Worker | null>(null);
  const evict = useEvictWorker(pool.id, { onSuccess: () => close() });
  const close = () => {
    evict.reset();
    setEvicting(null);
  };
  const workers = list.data?.pages.flatMap((page) => page.workers) ?? [];
  return (
    <section aria-labelledby="pool-workers">
      <h2 id="pool-workers">Workers</h2>
      {list.isPending ? (
        <p className="loading">Loading workers…</p>
      ) : !list.data ? (
        <ErrorMessage error={list.error} action="Listing the workers" />
      ) : workers.length === 0 ? (
        <EmptyState title="No workers yet.">
          <p>Make an enrollment token below and run the worker with it on each machine.</p>
        </EmptyState>
      ) : (
        <table className="table workers">
          <caption className="visually-hidden">Workers of {pool.name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Labels</th>
              <th scope="col">Capacity</th>
              <th scope="col">Usage</th>
              <th scope="col">Last seen</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {workers.map((worker) => (
              <tr key={worker.id}>
                <th scope="row" data-label="Name">
                  {worker.name}
                  <span className="hint worker-host">
                    {worker.hostname} · {worker.version}
                    {worker.sandboxed ? '' : ' · unsandboxed'}
                  </span>
                </th>
                <td data-label="Status">
                  <span className={`status-pill status-${worker.status}`}>{WORKER_STATUS[worker.status]}</span>
                </td>
                <td data-label="Labels">
                  {worker.labels.length > 0 ? (
                    worker.labels.map((label, i) => (
                      <span key={label}>
                        {i > 0 ? ', ' : ''}
                        <code>{label}</code>
                      </span>
                    ))
                  ) : (
                    <span className="muted">None</span>
                  )}
                </td>
                <td data-label="Capacity">
                  {worker.capacity.computers} computers · {worker.capacity.cpus} CPUs · {mib(worker.capacity.memoryMb)} memory · {mib(worker.capacity.diskMb)}{' '}
                  disk
                </td>
                <td data-label="Usage">
                  {worker.usage ? (
                    `${Math.round(worker.usage.cpuPercent)}% CPU · ${mib(worker.usage.memoryMb)} memory · ${mib(worker.usage.diskMb)} disk`
                  ) : (
                    <span className="muted">Not reported yet</span>
                  )}
                </td>
                <td data-label="Last seen">{formatTime(worker.lastSeenAt)}</td>
                <DangerRowAction action="Evict" name={worker.name} available={worker.status === 'online'} onClick={() => setEvicting(worker)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ShowMore list={list} label="Show more workers" errorAction="Listing more workers" />
      <ConfirmDialog
        open={evicting !== null}
        onOpenChange={(open) => (open ? undefined : close())}
        title={`Evict “${evicting?.name ?? ''}”?`}
        confirmLabel="Evict worker"
        pending={evict.isPending}
        onConfirm={() => evicting && evict.mutate(evicting)}
        error={<ErrorMessage error={evict.error} action="Evicting" />}
      >
        <p>
          Its session ends at once. Its computers get new agent tokens and are placed on another worker of the pool, their steps run again from the first: work
          not pushed is lost. It may register again while its enrollment token works.
        </p>
      </ConfirmDialog>
    </section>
  );
}

/** MiB as the reader reads sizes. */
function mib(value: number): string {
  return value >= 1024 ? `${Math.round((value / 1024) * 10) / 10} GiB` : `${value} MiB`;
}

function Tokens({ pool }: { pool: WorkerPool }) {
  const id = useId();
  // The token made in this tab just now, shown once: state only, so a reload does not show it again.
  const [created, setCreated] = useState<CreatedEnrollmentToken | null>(null);
  const [name, setName] = useState('');
  const [revoking, setRevoking] = useState<EnrollmentToken | null>(null);
  const list = useEnrollmentTokens(pool.id);
  const create = useCreateEnrollmentToken(pool.id, {
    onSuccess: (token) => {
      setName('');
      setCreated(token);
    },
  });
  const revoke = useRevokeEnrollmentToken(pool.id, { onSuccess: () => close() });
  const close = () => {
    revoke.reset();
    setRevoking(null);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ name: name.trim() });
  };
  const tokens = list.data?.pages.flatMap((page) => page.enrollmentTokens) ?? [];
  return (
    <section aria-labelledby="pool-tokens">
      <h2 id="pool-tokens">Enrollment tokens</h2>
      <p>A worker registers into the pool with an enrollment token. Revoking a token ends the session of every worker registered with it, at once.</p>
      {created ? (
        <>
          <OneTimeSecret
            label={`Enrollment token “${created.name}”`}
            secret={created.token}
            valueLabel="The enrollment token"
            note="The server keeps only a hash of it. Put it in a file on each worker (never on a command line); if you lose it, revoke it and make another."
            doneLabel="Done, I have stored it"
            onDone={() => setCreated(null)}
          />
          <WorkerCommand />
        </>
      ) : (
        <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
          <h3 id={`${id}-title`}>Make an enrollment token</h3>
          <div className="field">
            <label htmlFor={`${id}-name`}>Token name</label>
            <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} maxLength={100} required placeholder="rack 2" />
          </div>
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? 'Making…' : 'Make token'}
          </button>
          <ErrorMessage error={create.error} action="Making the token" />
        </form>
      )}
      {list.isPending ? (
        <p className="loading">Loading tokens…</p>
      ) : !list.data ? (
        <ErrorMessage error={list.error} action="Listing the tokens" />
      ) : tokens.length === 0 ? (
        <EmptyState title="No enrollment tokens yet." />
      ) : (
        <CredentialTable
          credentials={tokens}
          className="table tokens"
          caption={<>Enrollment tokens of {pool.name}</>}
          prefixLabel="Token"
          onRevoke={setRevoking}
        />
      )}
      <ShowMore list={list} label="Show more tokens" errorAction="Listing more tokens" />
      <RevokeCredentialDialog credential={revoking} revoke={revoke} confirmLabel="Revoke token" onClose={close}>
        <p>
          <code>{revoking?.prefix}…</code> registers no more workers, and every worker registered with it stops at once; their computers are placed on other
          workers. This cannot be undone.
        </p>
      </RevokeCredentialDialog>
    </section>
  );
}

/** How to run a worker with the token: from a file (`--token-file`), never on the command line, where `ps` shows it to every user. */
function WorkerCommand() {
  const command = [
    `install -m 600 /dev/null ${TOKEN_FILE}   # then paste the token into it`,
    `agent-platform worker --url ${window.location.origin} --token-file ${TOKEN_FILE}`,
  ].join('\n');
  return (
    <div className="command">
      <p>On each worker machine (Linux, agent-platform installed), as the user the worker runs as:</p>
      <pre aria-label="The worker's command">
        <code>{command}</code>
      </pre>
      <p className="hint">
        Add <code>--labels gpu,arch=x64</code> for what it offers, <code>--data-dir</code> for where it keeps its session;{' '}
        <code>agent-platform worker --help</code> lists the rest.
      </p>
    </div>
  );
}

function Settings({ pool }: { pool: WorkerPool }) {
  const id = useId();
  const [draft, setDraft] = useState(() => poolDraft(pool));
  const [saved, setSaved] = useState(false);
  const update = useUpdateWorkerPool(pool.id, { onSuccess: () => setSaved(true) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    update.mutate({
      name: draft.name.trim(),
      description: draft.description.trim() ? draft.description.trim() : null,
      maxComputersPerWorker: draft.max.trim() ? Number(draft.max) : null,
      allowUnsandboxed: draft.allowUnsandboxed,
    });
  };
  return (
    <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Settings</h2>
      <PoolFields value={draft} onChange={setDraft} />
      <button type="submit" className="primary" disabled={update.isPending}>
        {update.isPending ? 'Saving…' : 'Save settings'}
      </button>
      <p role="status" className="hint">
        {saved ? 'Saved. The computer cap and the sandbox rule apply to workers registering from now on.' : ''}
      </p>
      <ErrorMessage error={update.error} action="Saving the settings" />
    </form>
  );
}

function DeletePool({ pool }: { pool: WorkerPool }) {
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const remove = useDeleteWorkerPool(pool.id, { onSuccess: () => void navigate('/worker-pools') });
  const inUse = remove.error instanceof ApiProblem && remove.error.code === 'worker_pool_in_use';
  const close = () => {
    remove.reset();
    setOpen(false);
  };
  return (
    <section aria-labelledby="pool-delete">
      <h2 id="pool-delete">Delete the pool</h2>
      <p>Its enrollment tokens and workers go with it. A pool that computers were created for cannot be deleted: delete those computers first.</p>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Delete pool
      </button>
      <ConfirmDialog
        open={open}
        onOpenChange={(next) => (next ? undefined : close())}
        title={`Delete pool “${pool.name}”?`}
        confirmLabel="Delete pool"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
        error={
          <>
            <ErrorMessage error={remove.error} action="Deleting" />
            {inUse ? (
              <p className="alert alert-info">
                Computers were created for this pool. Delete them on the <Link to="/computers">Computers</Link> page, then delete the pool.
              </p>
            ) : null}
          </>
        }
      >
        <p>Its workers stop at once and its enrollment tokens stop working. This cannot be undone.</p>
      </ConfirmDialog>
    </section>
  );
}
