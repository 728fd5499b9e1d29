import { useId, useState, type FormEvent } from 'react';
import { useApiKeys, useCreateApiKey, useRevokeApiKey, type ApiKeyScope as Scope } from '../api/api-keys';
import type { Schemas } from '../api/client';
import { useFirstMembers } from '../api/members';
import { useAuth, useMe } from '../auth/auth';
import { CredentialTable } from '../components/CredentialTable';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { OneTimeSecret } from '../components/OneTimeSecret';
import { Page } from '../components/Page';
import { RevokeCredentialDialog } from '../components/RevokeCredentialDialog';
import { ShowMore } from '../components/ShowMore';

type ApiKey = Schemas['ApiKeyView'];

const DAY = 24 * 60 * 60 * 1000;
const EXPIRIES = [
  { value: 'never', label: 'Never (until revoked)' },
  { value: '7', label: 'In 7 days' },
  { value: '30', label: 'In 30 days' },
  { value: '90', label: 'In 90 days' },
  { value: '365', label: 'In a year' },
  { value: 'date', label: 'On a date…' },
];

/** `{app_url}/settings/api-keys`: create (shown once), list (paged as the API pages), revoke after a confirmation. */
export default function ApiKeys() {
  const me = useMe();
  const [scope, setScope] = useState<Scope>('own');
  const [created, setCreated] = useState<Schemas['CreatedApiKeyView'] | null>(null);
  return (
    <Page
      title="API keys"
      intro={
        <p>
          A key acts as you, with your role, on the API (<code>Authorization: Bearer apk_…</code>). Give each script or pipeline its own, so you can revoke one
          without breaking the others.
        </p>
      }
    >
      {created ? (
        <OneTimeSecret label={`New key “${created.name}”`} secret={created.key} doneLabel="Done, I have stored it" onDone={() => setCreated(null)} />
      ) : me.can.createApiKeys ? (
        <CreateKey onCreated={setCreated} />
      ) : (
        <p className="alert alert-info">
          Your organization lets only owners and managers create API keys (enterprise control restrictApiKeyCreationToManagers).
        </p>
      )}
      {me.can.manageOrganizationApiKeys ? (
        <fieldset className="segmented">
          <legend>Show</legend>
          <label>
            <input type="radio" name="scope" checked={scope === 'own'} onChange={() => setScope('own')} /> My keys
          </label>
          <label>
            <input type="radio" name="scope" checked={scope === 'organization'} onChange={() => setScope('organization')} /> Every key of {me.organization.name}
          </label>
        </fieldset>
      ) : null}
      <KeyList scope={scope} />
    </Page>
  );
}

function CreateKey({ onCreated }: { onCreated: (key: Schemas['CreatedApiKeyView']) => void }) {
  const id = useId();
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('never');
  const [date, setDate] = useState('');
  const create = useCreateApiKey({
    onSuccess: (key) => {
      setName('');
      setExpiry('never');
      setDate('');
      onCreated(key);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const expiresAt =
      expiry === 'never'
        ? undefined
        : expiry === 'date'
          ? date
            ? new Date(`${date}T23:59:59`).toISOString()
            : ''
          : new Date(Date.now() + Number(expiry) * DAY).toISOString();
    create.mutate({ name: name.trim(), ...(expiresAt !== undefined ? { expiresAt } : {}) });
  };
  return (
    <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a key</h2>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} maxLength={100} required placeholder="CI pipeline" />
      </div>
      <div className="field">
        <label htmlFor={`${id}-expiry`}>Expires</label>
        <select id={`${id}-expiry`} value={expiry} onChange={(event) => setExpiry(event.target.value)}>
          {EXPIRIES.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      </div>
      {expiry === 'date' ? (
        <div className="field">
          <label htmlFor={`${id}-date`}>Expiry date</label>
          <input id={`${id}-date`} type="date" value={date} onChange={(event) => setDate(event.target.value)} required />
        </div>
      ) : null}
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create key'}
      </button>
      <ErrorMessage error={create.error} action="Creating the key" />
    </form>
  );
}

function KeyList({ scope }: { scope: Scope }) {
  const me = useMe();
  const list = useApiKeys(scope);
  // Whose keys they are, by name: the members list is for owners and managers, the only ones who see this scope.
  const members = useFirstMembers({ enabled: scope === 'organization' });
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const ownerOf = (key: ApiKey) => {
    if (key.userId === me.user.id) return 'You';
    const member = members.data?.members.find((candidate) => candidate.id === key.userId);
    return member ? <span title={member.email}>{member.name}</span> : <code title={key.userId}>{key.userId.slice(0, 8)}</code>;
  };

  if (list.isPending) return <p className="loading">Loading keys…</p>;
  if (!list.data) return <ErrorMessage error={list.error} action="Listing the keys" />;
  const keys = list.data.pages.flatMap((page) => page.apiKeys);
  if (keys.length === 0) {
    return (
      <EmptyState title={scope === 'own' ? 'You have no API keys yet.' : 'Nobody in the organization has an API key yet.'}>
        {me.can.createApiKeys ? (
          <p>Create one above, give it a name that says where it will be used, and store it somewhere safe.</p>
        ) : (
          <p>Ask an owner or manager for one.</p>
        )}
      </EmptyState>
    );
  }
  return (
    <>
      <CredentialTable
        credentials={keys}
        className="table keys"
        caption={scope === 'own' ? 'Your API keys' : 'Every API key of the organization'}
        prefixLabel="Key"
        user={scope === 'organization' ? ownerOf : undefined}
        badge={(key) => (me.credential.apiKeyId === key.id ? <span className="badge">this session</span> : null)}
        onRevoke={setRevoking}
      />
      <ShowMore list={list} label="Show more keys" errorAction="Listing more keys" />
      <RevokeDialog apiKey={revoking} onClose={() => setRevoking(null)} />
    </>
  );
}

function RevokeDialog({ apiKey, onClose }: { apiKey: ApiKey | null; onClose: () => void }) {
  const me = useMe();
  const { signOut } = useAuth();
  const current = apiKey !== null && me.credential.apiKeyId === apiKey.id;
  const revoke = useRevokeApiKey({
    current,
    onSuccess: () => {
      if (current) signOut('You revoked the key you were signed in with. Sign in with another.');
      else close();
    },
  });
  const close = () => {
    revoke.reset();
    onClose();
  };
  return (
    <RevokeCredentialDialog credential={apiKey} revoke={revoke} confirmLabel="Revoke key" onClose={close}>
      <p>
        Anything using <code>{apiKey?.prefix}…</code> gets 401 from its next request. This cannot be undone.
      </p>
      {current ? <p className="alert alert-warning">This is the key you are signed in with: you will be signed out.</p> : null}
    </RevokeCredentialDialog>
  );
}
