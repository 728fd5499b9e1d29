import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiProblem, type Schemas } from '../api/client';
import { useComputer, useComputerLive, useDeleteComputer, useRetryProvisioning, useRotateAgentToken } from '../api/computers';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorMessage } from '../components/ErrorMessage';
import { LiveState } from '../components/LiveState';
import { OneTimeSecret } from '../components/OneTimeSecret';
import { Page } from '../components/Page';
import { agentCommand, providerLabel, runsOnLabel, STATUS_LABELS, takeToken, type Computer } from '../computers';
import { formatTime } from '../format';
import '../fleet.css';

type Step = Schemas['ProvisioningStep'];

const STEP_STATUS: Record<Step['status'], string> = { pending: 'Waiting', running: 'Running…', completed: 'Done', failed: 'Failed' };

/** `{app_url}/computers/:computerId`: one computer, its provisioning steps live, retry, its agent token, how to run its agent, delete. */
export default function ComputerDetail() {
  const { computerId = '' } = useParams();
  const computer = useComputer(computerId);
  // The token made in this tab just now (create), shown once; a reload starts without it.
  const [token, setToken] = useState<{ value: string; made: 'created' | 'rotated' } | null>(() => {
    const fresh = takeToken(computerId);
    return fresh ? { value: fresh, made: 'created' } : null;
  });
  const [tokenStored, setTokenStored] = useState<string | null>(null);
  const live = useComputerLive(computerId);

  const title = computer.data?.name ?? 'Computer';
  if (computer.isPending)
    return (
      <Page title="Computer">
        <p className="loading">Loading the computer…</p>
      </Page>
    );
  if (!computer.data) {
    const gone = computer.error instanceof ApiProblem && computer.error.status === 404;
    return (
      <Page title="Computer">
        <ErrorMessage error={computer.error} action="Reading the computer" />
        {gone ? <p>It was deleted, or it is not one you may see.</p> : null}
        <p>
          <Link to="/computers">Back to the computers</Link>
        </p>
      </Page>
    );
  }
  const c = computer.data;
  return (
    <Page
      title={title}
      intro={
        <p>
          <Link to="/computers">Computers</Link> › {c.name}
        </p>
      }
    >
      {token ? (
        <OneTimeSecret
          label={token.made === 'created' ? `Agent token of “${c.name}”` : `New agent token of “${c.name}”`}
          secret={token.value}
          valueLabel="The agent token"
          note={
            c.providerType === 'byom'
              ? 'The server keeps only a hash of it. Its agent uses it (below); if you lose it, rotate it and the old one stops working.'
              : 'The server keeps it encrypted to run this computer’s agent itself; you need it only to run the agent yourself (below). If you lose it, rotate it.'
          }
          doneLabel="Done, I have stored it"
          onDone={() => {
            setTokenStored(token.value);
            setToken(null);
          }}
        />
      ) : null}
      <section aria-labelledby="computer-status">
        <h2 id="computer-status">Status</h2>
        <LiveState state={live} />
        <p role="status" className="level-big">
          {c.status ? <span className={`status-pill status-${c.status}`}>{STATUS_LABELS[c.status]}</span> : '—'}
        </p>
        <Facts computer={c} />
        <Steps steps={c.provisioningSteps ?? []} />
        <Actions computer={c} onToken={(value) => setToken({ value, made: 'rotated' })} />
      </section>
      <RunAgent computer={c} token={token?.value ?? tokenStored ?? undefined} />
    </Page>
  );
}

function Facts({ computer }: { computer: Computer }) {
  return (
    <dl className="facts">
      <dt>Kind</dt>
      <dd>{providerLabel(computer.providerType)}</dd>
      <dt>Host</dt>
      <dd>{computer.hostname ?? 'Its agent has not connected yet'}</dd>
      {computer.runsOn ? (
        <>
          <dt>Runs on</dt>
          <dd data-fact="runs-on">{runsOnLabel(computer)}</dd>
        </>
      ) : null}
      {computer.placement ? (
        <>
          <dt>Placement</dt>
          <dd data-fact="placement">
            {computer.placement.poolName ? `Pool ${computer.placement.poolName}` : 'Any pool of the organization'}
            {computer.placement.labels.length > 0 ? (
              <>
                {', labels '}
                {computer.placement.labels.map((label, i) => (
                  <span key={label}>
                    {i > 0 ? ', ' : ''}
                    <code>{label}</code>
                  </span>
                ))}
              </>
            ) : (
              ', no labels'
            )}
          </dd>
        </>
      ) : null}
      {computer.hostId ? (
        <>
          <dt>Machine id</dt>
          <dd>
            <code>{computer.hostId}</code>
          </dd>
        </>
      ) : null}
      {computer.remoteUser ? (
        <>
          <dt>Runs as</dt>
          <dd>
            <code>{computer.remoteUser}</code>
          </dd>
        </>
      ) : null}
      {computer.clonedRepoDirectories && computer.clonedRepoDirectories.length > 0 ? (
        <>
          <dt>Repositories</dt>
          <dd>
            {computer.clonedRepoDirectories.map((directory) => (
              <code key={directory} className="block">
                {directory}
              </code>
            ))}
          </dd>
        </>
      ) : null}
      <dt>Created</dt>
      <dd>{formatTime(computer.createdAt)}</dd>
      <dt>Sessions</dt>
      <dd>
        <Link to={`/sessions?computerId=${encodeURIComponent(computer.id)}`}>Sessions on {computer.name}</Link>
      </dd>
    </dl>
  );
}

function Steps({ steps }: { steps: Step[] }) {
  if (steps.length === 0) return null;
  return (
    <>
      <h3>Provisioning steps</h3>
      <ol className="steps" aria-label="Provisioning steps">
        {steps.map((step) => (
          <li key={step.id} data-step={step.id} data-status={step.status}>
            <div className="step-head">
              <span>{step.name}</span>
              <span className={`status-pill status-${step.status}`}>{STEP_STATUS[step.status]}</span>
            </div>
            <p className="hint">
              {step.startedAt ? `Started ${formatTime(step.startedAt)}` : 'Not started'}
              {step.startedAt && step.completedAt ? `, took ${Math.max(0, Math.round((step.completedAt - step.startedAt) / 100) / 10)} s` : ''}
              {step.installSessionId ? (
                <>
                  {' · '}
                  <Link to={`/sessions/${step.installSessionId}`}>Its log</Link>
                </>
              ) : null}
            </p>
            {step.error ? <p className="step-error">{step.error}</p> : null}
          </li>
        ))}
      </ol>
    </>
  );
}

function Actions({ computer, onToken }: { computer: Computer; onToken: (token: string) => void }) {
  const navigate = useNavigate();
  const [confirm, setConfirm] = useState<'delete' | 'rotate' | null>(null);
  const retry = useRetryProvisioning(computer.id);
  const rotate = useRotateAgentToken(computer.id, {
    onSuccess: (agentToken) => {
      onToken(agentToken);
      close();
    },
  });
  const remove = useDeleteComputer(computer.id, { onSuccess: () => void navigate('/computers') });
  const close = () => {
    rotate.reset();
    remove.reset();
    setConfirm(null);
  };
  return (
    <>
      <div className="actions-row">
        {computer.status === 'error' ? (
          <button type="button" className="primary" onClick={() => retry.mutate()} disabled={retry.isPending}>
            {retry.isPending ? 'Retrying…' : 'Retry provisioning'}
          </button>
        ) : null}
        <button type="button" onClick={() => setConfirm('rotate')}>
          New agent token
        </button>
        <button type="button" className="danger" onClick={() => setConfirm('delete')}>
          Delete computer
        </button>
      </div>
      <ErrorMessage error={retry.error} action="Retrying" />
      <ConfirmDialog
        open={confirm === 'rotate'}
        onOpenChange={(open) => (open ? undefined : close())}
        title={`New agent token for “${computer.name}”?`}
        confirmLabel="Make a new token"
        pending={rotate.isPending}
        onConfirm={() => rotate.mutate()}
        error={<ErrorMessage error={rotate.error} action="Making a new token" />}
      >
        <p>The current token stops working at once: an agent using it stops. The new token is shown once.</p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirm === 'delete'}
        onOpenChange={(open) => (open ? undefined : close())}
        title={`Delete “${computer.name}”?`}
        confirmLabel="Delete computer"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
        error={<ErrorMessage error={remove.error} action="Deleting" />}
      >
        <p>
          Its agent token stops working{computer.providerType === 'local' ? ', its agent is stopped and its workspace removed' : ''}. Its sessions stay, without
          a computer. This cannot be undone.
        </p>
      </ConfirmDialog>
    </>
  );
}

function RunAgent({ computer, token }: { computer: Computer; token: string | undefined }) {
  const command = agentCommand(computer, token);
  return (
    <section aria-labelledby="run-agent">
      <h2 id="run-agent">Run its agent</h2>
      {computer.providerType === 'local' ? (
        <p>
          The server runs this computer’s agent itself, in the computer’s sandbox, once it is active. Run one yourself only where the operator turned that off (
          <code>LOCAL_AGENTS=off</code>):
        </p>
      ) : (
        <p>
          On the machine
          {computer.remoteUser ? (
            <>
              , as <code>{computer.remoteUser}</code>
            </>
          ) : null}
          , from a checkout of Agent Platform (<code>npm install</code> done), start the reference agent with the computer’s token. It takes this computer’s
          work from the server, runs a model with the workspace tools, and writes every step back to the session.
        </p>
      )}
      <div className="command">
        <pre aria-label="The agent's command">
          <code>{command}</code>
        </pre>
      </div>
      <p className="hint">
        {token
          ? 'The command holds the token you were just shown: keep it as safe as the token.'
          : 'Set AGENT_TOKEN to the agent token shown when the computer was made; lost it? Make a new agent token above.'}{' '}
        Without <code>AGENT_MODEL_BASE_URL</code> the agent uses your organization’s custom models through the server; to use a model of your own add{' '}
        <code>AGENT_MODEL_BASE_URL</code>, <code>AGENT_MODEL</code> and <code>AGENT_MODEL_API_KEY</code> before <code>npx agent-platform-agent</code>. Once it
        has connected, Host above names the machine.
      </p>
    </section>
  );
}
