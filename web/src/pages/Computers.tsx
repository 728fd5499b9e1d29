import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { useComputers, useComputersLive, useCreateComputer } from '../api/computers';
import { useMe } from '../auth/auth';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { Page } from '../components/Page';
import { handOverToken, newUuid, PROVIDERS, providerLabel, runsOnLabel, STATUS_LABELS, type Computer, type Provider } from '../computers';
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
    const body =
      provider === 'byom'
        ? { provider, name: name.trim(), hostId: hostId.trim(), remoteUser: remoteUser.trim() }
        : {
            provider,
            name: name.trim(),
            ...(remoteUser.trim() ? { remoteUser: remoteUser.trim() } : {}),
            ...(repoList.length > 0 ? { repos: repoList, autoInstallDeps } : {}),
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
        </>
      ) : null}
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create computer'}
      </button>
      <ErrorMessage error={create.error} action="Creating the computer" />
    </form>
  );
}
