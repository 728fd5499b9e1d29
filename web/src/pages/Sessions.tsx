import { useId } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { useComputers } from '../api/computers';
import { useCreateSession, useSessions } from '../api/sessions';
import { useMe } from '../auth/auth';
import { EmptyState } from '../components/EmptyState';
import { ErrorMessage } from '../components/ErrorMessage';
import { Page } from '../components/Page';
import { ShowMore } from '../components/ShowMore';
import { formatTime } from '../format';
import { STATUS_LABELS, maySeeComputers, mayWriteSessions, sessionName, type Computer } from '../sessions/format';

/** `/sessions`: the sessions the user may read, newest first, paged by the API's cursor, filtered by computer. */
export default function Sessions() {
  const me = useMe();
  const [params, setParams] = useSearchParams();
  const computerId = params.get('computerId') ?? '';
  const computers = useComputers({ enabled: maySeeComputers(me.user.role) });
  const computerName = (id: string | undefined) => {
    if (!id) return null;
    const computer = computers.data?.computers.find((candidate) => candidate.id === id);
    return computer ? computer.name : <code title={id}>{id.slice(0, 8)}</code>;
  };
  const chooseComputer = (id: string) => setParams(id ? { computerId: id } : {}, { replace: true });
  return (
    <Page
      title="Sessions"
      intro={<p>Conversations with agents about work on a computer. Open one to follow it live, add a message, or answer an agent that asks for approval.</p>}
    >
      <div className="toolbar">
        {maySeeComputers(me.user.role) ? <ComputerFilter computers={computers.data?.computers ?? []} value={computerId} onChange={chooseComputer} /> : null}
        {mayWriteSessions(me.user.role) ? <NewSession computerId={computerId || undefined} /> : null}
      </div>
      <ErrorMessage error={computers.error} action="Listing the computers" />
      <SessionList computerId={computerId || undefined} computerName={computerName} onClearFilter={() => chooseComputer('')} />
    </Page>
  );
}

function ComputerFilter({ computers, value, onChange }: { computers: Computer[]; value: string; onChange: (id: string) => void }) {
  const id = useId();
  const known = value === '' || computers.some((computer) => computer.id === value);
  return (
    <div className="field">
      <label htmlFor={id}>Computer</label>
      <select id={id} value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">Every computer</option>
        {computers.map((computer) => (
          <option key={computer.id} value={computer.id}>
            {computer.name}
          </option>
        ))}
        {known ? null : <option value={value}>{value}</option>}
      </select>
    </div>
  );
}

function NewSession({ computerId }: { computerId?: string }) {
  const navigate = useNavigate();
  const create = useCreateSession({ onSuccess: (session) => void navigate(`/sessions/${session.sessionId}`) });
  return (
    <div className="new-session">
      <button type="button" className="primary" onClick={() => create.mutate(computerId)} disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'New session'}
      </button>
      <ErrorMessage error={create.error} action="Creating the session" />
    </div>
  );
}

function SessionList({
  computerId,
  computerName,
  onClearFilter,
}: {
  computerId?: string;
  computerName: (id: string | undefined) => React.ReactNode;
  onClearFilter: () => void;
}) {
  const me = useMe();
  const list = useSessions(computerId);
  if (list.isPending) return <p className="loading">Loading sessions…</p>;
  if (!list.data) {
    return (
      <>
        <ErrorMessage error={list.error} action="Listing the sessions" />
        {computerId ? (
          <button type="button" onClick={onClearFilter}>
            Show every computer’s sessions
          </button>
        ) : null}
      </>
    );
  }
  const sessions = list.data.pages.flatMap((page) => page.sessions);
  if (sessions.length === 0) return <NoSessions filtered={computerId !== undefined} mayCreate={mayWriteSessions(me.user.role)} />;
  return (
    <>
      <table className="table sessions">
        <caption className="visually-hidden">Sessions, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Status</th>
            <th scope="col">Computer</th>
            <th scope="col">Messages</th>
            <th scope="col">Last activity</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((session) => (
            <tr key={session.sessionId}>
              <th scope="row" data-label="Session">
                <Link to={`/sessions/${session.sessionId}`}>{sessionName(session)}</Link>
              </th>
              <td data-label="Status">
                <span className={`status-pill session-${session.status}`}>{STATUS_LABELS[session.status]}</span>
                {session.pendingToolApprovals ? <span className="badge">{session.pendingToolApprovals} to approve</span> : null}
              </td>
              <td data-label="Computer">{computerName(session.computerId) ?? <span className="muted">None</span>}</td>
              <td data-label="Messages">{session.messageCount}</td>
              <td data-label="Last activity">{formatTime(session.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <ShowMore list={list} label="Show more" errorAction="Listing more sessions" />
    </>
  );
}

function NoSessions({ filtered, mayCreate }: { filtered: boolean; mayCreate: boolean }) {
  const origin = window.location.origin;
  return (
    <EmptyState title={filtered ? 'No session is connected to this computer.' : 'No sessions yet.'}>
      {mayCreate ? (
        <>
          <p>
            Start one with <strong>New session</strong> above, then write what the agent should do. Or from a script, with an API key (
            <Link to="/settings/api-keys">API keys</Link>):
          </p>
          <pre className="code-block" tabIndex={0} aria-label="Starting a session with curl">
            <code>{`curl -X POST ${origin}/api/v0/sessions -H "Authorization: Bearer $KEY" \\
  -H 'content-type: application/json' -d '{"title": "Add a health check"}'
curl -X POST ${origin}/api/v0/sessions/$SESSION/messages -H "Authorization: Bearer $KEY" \\
  -H 'content-type: application/json' -d '{"text": "Add GET /healthz with a test."}'`}</code>
          </pre>
          <p>
            An agent then takes the work: run the reference agent on a computer (
            <code>AGENT_TOKEN=&lt;agent token&gt; npx agent-platform-agent --url {origin}</code>) or use a managed computer, whose agent the server runs.
          </p>
        </>
      ) : (
        <p>Guests read only their own sessions, and cannot start one: ask an owner, manager or member of your organization to share the work.</p>
      )}
    </EmptyState>
  );
}
