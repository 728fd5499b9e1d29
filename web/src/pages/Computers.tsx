import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useComputers, useComputersLive, useCreateComputer } from '../api/computers';
import { useMe } from '../auth/auth';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { Page } from '../components/Page';
import { useFirstWorkerPools } from '../api/worker-pools';
import { handOverToken, newUuid, parseLabels, PROVIDERS, providerLabel, runsOnLabel, STATUS_LABELS, type Computer, type Provider } from '../computers';
import { ADMINS } from '../routes';
import { formatTime } from '../format';
import { LiveState } from '../components/LiveState';
import '../fleet.css';

/** `{app_url}/computers`: the computers you may see (owners and managers: all of the organization's; members: their own), and a new one. */
export default function Computers() {
  const me = useMe();
  const list = useComputers();
  const live = useComputersLive();
  return (
    <Page
      title="Computers"
      intro={
        <p>
          A computer is where an agent works: a machine you run (BYOM) or a workspace the server prepares. Sessions run on a computer.{' '}
          {me.user.role === 'member' ? 'You see your own computers.' : `You see every computer of ${me.organization.name}.`}
        </p>
      }
    >
      <CreateComputer />
      <h2>Computers</h2>
      <LiveState state={live} />
      {list.isPending ? (
        <p className="loading">Loading computers…</p>
      ) : !list.data ? (
        <ErrorMessage error={list.error} action="Listing the computers" />
      ) : list.data.computers.length === 0 ? (
        <EmptyState title="No computers yet.">
          <p>Create one above: register your own machine (BYOM) and run its agent there, or let the server prepare a managed workspace.</p>
        </EmptyState>
      ) : (
        <ComputerTable computers={list.data.computers} />
      )}
    </Page>
  );
}

function ComputerTable({ computers }: { computers: Computer[] }) {
  return (
    <table className="table computers">
      <caption className="visually-hidden">Computers</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Kind</th>
          <th scope="col">Status</th>
          <th scope="col">Host</th>
          <th scope="col">Runs on</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {computers.map((computer) => (
          <tr key={computer.id}>
            <th scope="row" data-label="Name">
              <Link to={`/computers/${computer.id}`}>{computer.name}</Link>
            </th>
            <td data-label="Kind">{providerLabel(computer.providerType)}</td>
            <td data-label="Status">
              {computer.status ? <span className={`status-pill status-${computer.status}`}>{STATUS_LABELS[computer.status]}</span> : '—'}
            </td>
            <td data-label="Host">{computer.hostname ?? <span className="muted">Agent not connected yet</span>}</td>
            <td data-label="Runs on">{runsOnLabel(computer) ?? <span className="muted">—</span>}</td>
            <td data-label="Created">{formatTime(computer.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function CreateComputer() {
  const id = useId();
  const navigate = useNavigate();
  const [provider, setProvider] = useState<Provider>('byom');
  const [name, setName] = useState('');
  const [hostId, setHostId] = useState(newUuid);
  const [remoteUser, setRemoteUser] = useState('');
  const [repos, setRepos] = useState('');
  const [autoInstallDeps, setAutoInstallDeps] = useState(true);
  const [runOn, setRunOn] = useState<'server' | 'pool'>('server');
  const [pool, setPool] = useState('');
  const [labels, setLabels] = useState('');
  const [labelsProblem, setLabelsProblem] = useState<string | null>(null);
  const create = useCreateComputer({
    onSuccess: (computer) => {
      if (computer.agentToken) handOverToken(computer.id, computer.agentToken);
      void navigate(`/computers/${computer.id}`);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const repoList = repos
      .split('\n')
      .map((repo) => repo.trim())
      .filter(Boolean);
    // Labels without a pool mean any pool of the organization; neither would mean this server, which is the other choice.
    const onPool = provider === 'local' && runOn === 'pool';
    const placement = onPool ? parseLabels(labels) : { labels: [], problem: null };
    const poolName = onPool ? pool.trim() : '';
    const problem =
      placement.problem ?? (onPool && !poolName && placement.labels.length === 0 ? 'Choose a pool, or give the labels its worker must have.' : null);
    setLabelsProblem(problem);
    if (problem) return;
    const body =
      provider === 'byom'
        ? { provider, name: name.trim(), hostId: hostId.trim(), remoteUser: remoteUser.trim() }
        : {
            provider,
            name: name.trim(),
            ...(remoteUser.trim() ? { remoteUser: remoteUser.trim() } : {}),
            ...(repoList.length > 0 ? { repos: repoList, autoInstallDeps } : {}),
            ...(poolName ? { pool: poolName } : {}),
            ...(placement.labels.length > 0 ? { labels: placement.labels } : {}),
          };
    create.mutate(body);
  };
  return (
    <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a computer</h2>
      <fieldset className="segmented provider-choice">
        <legend>Kind</legend>
        {(Object.keys(PROVIDERS) as Provider[]).map((option) => (
          <label key={option}>
            <input type="radio" name={`${id}-provider`} value={option} checked={provider === option} onChange={() => setProvider(option)} />{' '}
            {PROVIDERS[option].label}
          </label>
        ))}
        <p className="hint">{PROVIDERS[provider].description}</p>
      </fieldset>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          value={name}
          onChange={(event) => setName(event.target.value)}
          maxLength={63}
          required
          placeholder={provider === 'byom' ? 'My laptop' : 'Web app workspace'}
        />
      </div>
      {provider === 'byom' ? (
        <div className="field">
          <label htmlFor={`${id}-host`}>Machine id (hostId)</label>
          <input
            id={`${id}-host`}
            value={hostId}
            onChange={(event) => setHostId(event.target.value)}
            required
            spellCheck={false}
            aria-describedby={`${id}-host-hint`}
          />
          <p className="hint" id={`${id}-host-hint`}>
            A UUID naming the machine; a new one is filled in.
          </p>
        </div>
      ) : null}
      <div className="field">
        <label htmlFor={`${id}-user`}>{provider === 'byom' ? 'User the agent runs as' : 'User the agent runs as (optional)'}</label>
        <input
          id={`${id}-user`}
          value={remoteUser}
          onChange={(event) => setRemoteUser(event.target.value)}
          maxLength={63}
          required={provider === 'byom'}
          spellCheck={false}
          placeholder={provider === 'byom' ? 'olivia' : "the server's user"}
        />
      </div>
      {provider === 'local' ? (
        <>
          <div className="field field-wide">
            <label htmlFor={`${id}-repos`}>Repositories to clone (one a line, optional)</label>
            <textarea
              id={`${id}-repos`}
              value={repos}
              onChange={(event) => setRepos(event.target.value)}
              rows={3}
              spellCheck={false}
              placeholder="https://github.com/acme/web.git"
            />
          </div>
          <label className="checkbox">
            <input type="checkbox" checked={autoInstallDeps} onChange={(event) => setAutoInstallDeps(event.target.checked)} /> Install their dependencies
          </label>
          <RunOn
            runOn={runOn}
            onRunOn={setRunOn}
            pool={pool}
            onPool={setPool}
            labels={labels}
            onLabels={(value) => {
              setLabels(value);
              setLabelsProblem(null);
            }}
            problem={labelsProblem}
          />
        </>
      ) : null}
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create computer'}
      </button>
      <ErrorMessage error={create.error} action="Creating the computer" />
    </form>
  );
}

/**
 * Where a managed computer runs: this server (the default) or a worker of a pool. Owners and managers choose the pool
 * from the organization's; members, whom the API refuses the pools list, type its name (an owner or manager gives it).
 * Labels, comma separated, are checked as the API checks them before the form is sent.
 */
function RunOn(props: {
  runOn: 'server' | 'pool';
  onRunOn: (runOn: 'server' | 'pool') => void;
  pool: string;
  onPool: (pool: string) => void;
  labels: string;
  onLabels: (labels: string) => void;
  problem: string | null;
}) {
  const id = useId();
  const me = useMe();
  const mayListPools = ADMINS.includes(me.user.role);
  const pools = useFirstWorkerPools({ enabled: mayListPools && props.runOn === 'pool' });
  const choices = pools.data?.workerPools ?? [];
  return (
    <fieldset className="segmented run-on">
      <legend>Run on</legend>
      <label>
        <input type="radio" name={`${id}-run-on`} checked={props.runOn === 'server'} onChange={() => props.onRunOn('server')} /> This server
      </label>
      <label>
        <input type="radio" name={`${id}-run-on`} checked={props.runOn === 'pool'} onChange={() => props.onRunOn('pool')} /> A worker pool
      </label>
      {props.runOn === 'pool' ? (
        <>
          <p className="hint">
            The server places the computer on a worker of the pool with room and every label; that worker provisions it and runs its agent. If the worker goes
            away, the computer is provisioned again on another.
          </p>
          <div className="field">
            <label htmlFor={`${id}-pool`}>Pool</label>
            {mayListPools && !pools.isError ? (
              <select id={`${id}-pool`} value={props.pool} onChange={(event) => props.onPool(event.target.value)} disabled={pools.isPending}>
                <option value="">{pools.isPending ? 'Loading pools…' : 'Any pool (by labels)'}</option>
                {choices.map((choice) => (
                  <option key={choice.id} value={choice.name}>
                    {choice.name}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={`${id}-pool`}
                value={props.pool}
                onChange={(event) => props.onPool(event.target.value)}
                maxLength={63}
                spellCheck={false}
                placeholder="gpu-lab"
                aria-describedby={`${id}-pool-hint`}
              />
            )}
            {mayListPools && !pools.isError ? null : (
              <p className="hint" id={`${id}-pool-hint`}>
                Its name, as an owner or manager gave it; blank: any pool whose worker has the labels.
              </p>
            )}
            {pools.isError ? <ErrorMessage error={pools.error} action="Listing the pools" /> : null}
          </div>
          <div className={`field${props.problem ? ' has-error' : ''}`}>
            <label htmlFor={`${id}-labels`}>Labels (comma separated, optional)</label>
            <input
              id={`${id}-labels`}
              value={props.labels}
              onChange={(event) => props.onLabels(event.target.value)}
              spellCheck={false}
              placeholder="gpu, arch=arm64"
              aria-invalid={props.problem ? true : undefined}
              aria-describedby={props.problem ? `${id}-labels-problem ${id}-labels-hint` : `${id}-labels-hint`}
            />
            <p className="hint" id={`${id}-labels-hint`}>
              Its worker must have every one.
            </p>
            {props.problem ? (
              <p className="field-error" id={`${id}-labels-problem`}>
                {props.problem}
              </p>
            ) : null}
          </div>
        </>
      ) : null}
    </fieldset>
  );
}
