import * as Dialog from '@radix-ui/react-dialog';
import { useId, useLayoutEffect, useRef, useState, type FormEvent } from 'react';
import type { Role, Schemas } from '../api/client';
import { useAddMember, useChangeMemberRole, useCreateServiceAccountKey, useMembers, useRemoveMember, type MemberKind as Kind } from '../api/members';
import { useAuth, useMe } from '../auth/auth';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { OneTimeSecret } from '../components/OneTimeSecret';
import { Page } from '../components/Page';
import { ShowMore } from '../components/ShowMore';
import { ActionsHeader } from '../components/TableActions';
import { formatTime, ROLE_LABELS } from '../format';
import '../fleet.css';

type Member = Schemas['MemberView'];

/**
 * The API's rule, from the members operations' descriptions: you add, change and remove members ranked no higher than
 * you, and give roles no higher than yours. Typed over the API's Role, so a new role breaks the build, not the page.
 */
const RANK: Record<Role, number> = { owner: 4, manager: 3, member: 2, guest: 1 };
const ROLES_BY_RANK = (Object.keys(RANK) as Role[]).sort((a, b) => RANK[b] - RANK[a]);
const KIND_LABELS: Record<Kind, string> = { human: 'Person', service_account: 'Service account' };

const assignable = (mine: Role) => ROLES_BY_RANK.filter((role) => RANK[role] <= RANK[mine]);

/** `{app_url}/members`: owners and managers list, add, change and remove the organization's users and service accounts. */
export default function Members() {
  const me = useMe();
  return (
    <Page
      title="Members"
      intro={
        <p>
          The people and service accounts of {me.organization.name}. You may add, change and remove members up to your own role ({ROLE_LABELS[me.user.role]}
          ); the organization always keeps one owner. Nobody is emailed: give a new person an API key, or let them sign in through your identity provider.
        </p>
      }
    >
      <AddMember />
      <MemberList />
    </Page>
  );
}

function AddMember() {
  const me = useMe();
  const id = useId();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [kind, setKind] = useState<Kind>('human');
  const [added, setAdded] = useState<Member | null>(null);
  const add = useAddMember({
    onSuccess: (member) => {
      setEmail('');
      setName('');
      setAdded(member);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setAdded(null);
    add.mutate({ email: email.trim(), name: name.trim(), role, kind });
  };
  return (
    <form className="form form-inline" onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Add a member</h2>
      <div className="field">
        <label htmlFor={`${id}-email`}>Email</label>
        <input id={`${id}-email`} type="email" value={email} onChange={(event) => setEmail(event.target.value)} maxLength={254} required autoComplete="off" />
      </div>
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} maxLength={200} required autoComplete="off" />
      </div>
      <div className="field">
        <label htmlFor={`${id}-role`}>Role</label>
        <select id={`${id}-role`} value={role} onChange={(event) => setRole(event.target.value as Role)}>
          {assignable(me.user.role).map((option) => (
            <option key={option} value={option}>
              {ROLE_LABELS[option]}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-kind`}>Kind</label>
        <select id={`${id}-kind`} value={kind} onChange={(event) => setKind(event.target.value as Kind)}>
          {(Object.keys(KIND_LABELS) as Kind[]).map((option) => (
            <option key={option} value={option}>
              {KIND_LABELS[option]}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="primary" disabled={add.isPending}>
        {add.isPending ? 'Adding…' : 'Add member'}
      </button>
      <ErrorMessage error={add.error} action="Adding the member" />
      <p role="status" className="form-status">
        {added ? `${added.name} (${added.email}) was added as ${ROLE_LABELS[added.role]}.` : ''}
      </p>
    </form>
  );
}

function MemberList() {
  const me = useMe();
  const [kind, setKind] = useState<Kind | 'all'>('all');
  const list = useMembers(kind);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [keyFor, setKeyFor] = useState<Member | null>(null);
  const [madeKey, setMadeKey] = useState<{ member: Member; key: Schemas['CreatedApiKeyView'] } | null>(null);

  const filter = (
    <fieldset className="segmented">
      <legend>Show</legend>
      {(['all', 'human', 'service_account'] as const).map((option) => (
        <label key={option}>
          <input type="radio" name="member-kind" checked={kind === option} onChange={() => setKind(option)} />{' '}
          {option === 'all' ? 'Everyone' : option === 'human' ? 'People' : 'Service accounts'}
        </label>
      ))}
    </fieldset>
  );
  if (list.isPending)
    return (
      <>
        {filter}
        <p className="loading">Loading members…</p>
      </>
    );
  if (!list.data)
    return (
      <>
        {filter}
        <ErrorMessage error={list.error} action="Listing the members" />
      </>
    );
  const members = list.data.pages.flatMap((page) => page.members);
  return (
    <>
      <h2>Who is in {me.organization.name}</h2>
      {madeKey ? (
        <OneTimeSecret
          label={`New key “${madeKey.key.name}” for ${madeKey.member.name}`}
          secret={madeKey.key.key}
          doneLabel="Done, I have stored it"
          onDone={() => setMadeKey(null)}
        />
      ) : null}
      {filter}
      {members.length === 0 ? (
        <EmptyState title={kind === 'service_account' ? 'No service accounts yet.' : 'Nobody matches.'}>
          <p>Add one with the form above{kind === 'service_account' ? ' (kind “Service account”): automation then acts as it, with keys made for it.' : '.'}</p>
        </EmptyState>
      ) : (
        <table className="table members">
          <caption className="visually-hidden">Members of {me.organization.name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Kind</th>
              <th scope="col">Added</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {members.map((member) => (
              <MemberRow key={member.id} member={member} onRemove={() => setRemoving(member)} onNewKey={() => setKeyFor(member)} />
            ))}
          </tbody>
        </table>
      )}
      <ShowMore list={list} label="Show more members" errorAction="Listing more members" />
      <RemoveDialog member={removing} onClose={() => setRemoving(null)} />
      <ServiceAccountKeyDialog
        member={keyFor}
        onClose={() => setKeyFor(null)}
        onMade={(member, key) => {
          setKeyFor(null);
          setMadeKey({ member, key });
        }}
      />
    </>
  );
}

function MemberRow({ member, onRemove, onNewKey }: { member: Member; onRemove: () => void; onNewKey: () => void }) {
  const me = useMe();
  const { refresh } = useAuth();
  const id = useId();
  const [role, setRole] = useState<Role>(member.role);
  const reachable = RANK[member.role] <= RANK[me.user.role];
  const yourself = member.id === me.user.id;
  const change = useChangeMemberRole(member.id, {
    onSuccess: async () => {
      // Your own role changed: what you may do changed with it.
      if (yourself) await refresh();
    },
    onError: () => setRole(member.role),
  });
  return (
    <tr>
      <th scope="row" data-label="Name">
        {member.name}
        {yourself ? <span className="badge">you</span> : null}
      </th>
      <td data-label="Email">{member.email}</td>
      <td data-label="Role">
        {reachable ? (
          <div className="role-editor">
            <label htmlFor={`${id}-role`} className="visually-hidden">
              Role of {member.name}
            </label>
            <select id={`${id}-role`} value={role} onChange={(event) => setRole(event.target.value as Role)} disabled={change.isPending}>
              {assignable(me.user.role).map((option) => (
                <option key={option} value={option}>
                  {ROLE_LABELS[option]}
                </option>
              ))}
            </select>
            {role !== member.role ? (
              <button
                type="button"
                className="small primary"
                onClick={() => change.mutate(role)}
                disabled={change.isPending}
                aria-label={`Save the role of ${member.name}`}
              >
                {change.isPending ? 'Saving…' : 'Save'}
              </button>
            ) : null}
          </div>
        ) : (
          <span title="Ranked above you: only an owner may change them">{ROLE_LABELS[member.role]}</span>
        )}
        <ErrorMessage error={change.error} action={`Changing the role of ${member.name}`} />
      </td>
      <td data-label="Kind">{KIND_LABELS[member.kind]}</td>
      <td data-label="Added">{formatTime(member.createdAt)}</td>
      <td data-label="">
        {reachable ? (
          <div className="actions-row tight">
            {member.kind === 'service_account' ? (
              <button type="button" className="small" onClick={onNewKey} aria-label={`New key for ${member.name}`}>
                New key
              </button>
            ) : null}
            <button type="button" className="danger small" onClick={onRemove} aria-label={`Remove ${member.name}`}>
              Remove
            </button>
          </div>
        ) : null}
      </td>
    </tr>
  );
}

function RemoveDialog({ member, onClose }: { member: Member | null; onClose: () => void }) {
  const me = useMe();
  const { signOut } = useAuth();
  const yourself = member !== null && member.id === me.user.id;
  const remove = useRemoveMember({
    yourself,
    onSuccess: () => {
      if (yourself) signOut('You removed yourself from the organization: your keys no longer work.');
      else close();
    },
  });
  const close = () => {
    remove.reset();
    onClose();
  };
  return (
    <ConfirmDialog
      open={member !== null}
      onOpenChange={(open) => (open ? undefined : close())}
      title={`Remove ${member?.name ?? ''}?`}
      confirmLabel="Remove member"
      pending={remove.isPending}
      onConfirm={() => member && remove.mutate(member)}
      error={<ErrorMessage error={remove.error} action="Removing" />}
    >
      <p>
        Every key of {member?.email} is revoked at once and none of their credentials works again. What they made (sessions, computers, control revisions)
        stays. Adding the address again brings them back.
      </p>
      {yourself ? <p className="alert alert-warning">This is you: you will be signed out.</p> : null}
    </ConfirmDialog>
  );
}

/** A key for a service account (people make their own on the API keys page): named here, shown once by the page. */
function ServiceAccountKeyDialog({
  member,
  onClose,
  onMade,
}: {
  member: Member | null;
  onClose: () => void;
  onMade: (member: Member, key: Schemas['CreatedApiKeyView']) => void;
}) {
  const id = useId();
  const [name, setName] = useState('');
  // No Radix trigger: the focus goes back to the row's button, or to the new key once it is shown.
  const opener = useRef<HTMLElement | null>(null);
  useLayoutEffect(() => {
    if (member) opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  }, [member]);
  const create = useCreateServiceAccountKey({
    onSuccess: (key, target) => {
      setName('');
      create.reset();
      onMade(target, key);
    },
  });
  const close = () => {
    create.reset();
    setName('');
    onClose();
  };
  return (
    <Dialog.Root open={member !== null} onOpenChange={(open) => (open ? undefined : close())}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content
          className="dialog"
          onCloseAutoFocus={(event) => {
            const secret = document.querySelector<HTMLElement>('.one-time-secret input');
            const target = secret ?? (opener.current?.isConnected ? opener.current : null);
            if (target) {
              event.preventDefault();
              target.focus();
            }
          }}
        >
          <Dialog.Title>New key for {member?.name}</Dialog.Title>
          <Dialog.Description>
            The service account acts with its role ({member ? ROLE_LABELS[member.role] : ''}) through this key. It is shown once.
          </Dialog.Description>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              if (member) create.mutate({ member, name: name.trim() });
            }}
            noValidate
          >
            <div className="field">
              <label htmlFor={`${id}-name`}>Key name</label>
              <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} maxLength={100} required placeholder="Nightly pipeline" />
            </div>
            <ErrorMessage error={create.error} action="Creating the key" />
            <div className="dialog-actions">
              <Dialog.Close asChild>
                <button type="button">Cancel</button>
              </Dialog.Close>
              <button type="submit" className="primary" disabled={create.isPending}>
                {create.isPending ? 'Creating…' : 'Create key'}
              </button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
