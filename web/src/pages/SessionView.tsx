import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useComputers } from '../api/computers';
import { useSessionEvents, type LiveState, type StreamEvent } from '../api/session-events';
import { useInterruptSession, useMessages, useSession, useSessionCache } from '../api/sessions';
import { useMe } from '../auth/auth';
import { ErrorMessage } from '../components/ErrorMessage';
import { Page } from '../components/Page';
import { formatTime } from '../format';
import { useSessionWriteAccess } from '../sessions/access';
import type { WireMessage } from '../sessions/blocks';
import { Composer } from '../sessions/Composer';
import { STATUS_LABELS, maySeeComputers, sessionName } from '../sessions/format';
import { Messages, PlanList } from '../sessions/Messages';
import { latestPlan } from '../sessions/plan';
import { useModelNames } from '../sessions/model-names';
import { ToolApprovals } from '../sessions/ToolApprovals';
import { finished, NOT_WRITING, stopped, toolsFinished, withDelta, type Writing } from '../sessions/writing';

/** `/sessions/:sessionId`: the conversation, live from the session's event stream; add a message, interrupt, approve. */
export default function SessionView() {
  const { sessionId = '' } = useParams();
  const me = useMe();
  const session = useSession(sessionId);
  // Newest first from the API (order=newest), shown oldest first; "Earlier messages" pages back.
  const history = useMessages(sessionId);
  const computers = useComputers({ enabled: maySeeComputers(me.user.role) });
  const cache = useSessionCache(sessionId);

  const access = useSessionWriteAccess(sessionId, me);
  const modelName = useModelNames(me.user.role);
  const [writing, setWriting] = useState<Writing>(NOT_WRITING);

  const live = useSessionEvents(sessionId, {
    onFresh: () => {
      setWriting(NOT_WRITING);
      cache.readAgain();
    },
    // Pieces sent while the stream was down are lost: rather than text with a hole, what was under way waits for its message.
    onDropped: () => setWriting(stopped),
    // What the agent is doing is kept here only: nothing is read again for it.
    onDelta: (delta) => {
      if (delta.sessionId === sessionId) setWriting((state) => withDelta(state, delta));
    },
    onEvent: (event: StreamEvent) => {
      if (event.type === 'message.added' && event.data.role === 'assistant') setWriting(finished);
      if (event.type === 'session.status_changed' && event.data.to !== 'running') setWriting(stopped);
      if (event.type === 'message.added' && event.data.role === 'tool') {
        // Its results replace the output of their tools (all of it when the event carries no message).
        const stored = event.data.message as WireMessage | undefined;
        const ids = stored?.content.flatMap((block) => (block.type === 'tool_result' ? [block.toolUseId] : []));
        setWriting((state) => toolsFinished(state, ids ?? state.running.map((tool) => tool.toolUseId)));
      }
      if (event.type === 'message.added') cache.messageAdded(event.data.message as WireMessage | undefined);
      if (event.type.startsWith('tool_approval.')) cache.toolApprovalsChanged();
      // Status, interrupt, usage, approvals waiting, message count: all on the session itself.
      cache.sessionChanged();
    },
  });

  if (session.isPending) return <p className="loading">Loading the session…</p>;
  if (!session.data) {
    return (
      <Page title="Session">
        <ErrorMessage error={session.error} action="Opening the session" />
        <p>
          <Link to="/sessions">Back to the sessions</Link>
        </p>
      </Page>
    );
  }
  const current = session.data;
  const computer = current.computerId ? computers.data?.computers.find((candidate) => candidate.id === current.computerId) : undefined;
  const messages = (history.data?.pages ?? [])
    .flatMap((page) => page.messages)
    .slice()
    .reverse();
  const usage = current.sessionSettings?.tokenUsage;
  // The agent's latest plan, as the messages read so far hold it; each new one arrives with its message.
  const plan = latestPlan(messages);
  // Unknown owner (its creation is past the log's retention): the controls show and the server decides.
  const mayWrite = access === 'yes' || access === 'unknown';
  return (
    <Page title={sessionName(current)}>
      <p>
        <Link to="/sessions">← Sessions</Link>
      </p>
      <dl className="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <span className={`status-pill session-${current.status}`} data-testid="session-status">
              {STATUS_LABELS[current.status]}
            </span>
            {current.interruptedAt ? <span className="badge">stopping (interrupted {formatTime(current.interruptedAt)})</span> : null}
          </dd>
        </div>
        <div>
          <dt>Computer</dt>
          <dd>{current.computerId ? (computer?.name ?? <code>{current.computerId}</code>) : 'Any agent of the organization'}</dd>
        </div>
        <div>
          <dt>Model</dt>
          <dd data-testid="session-model">{current.sessionSettings?.model ? modelName(current.sessionSettings.model) : 'The agent’s default'}</dd>
        </div>
        <div>
          <dt>Messages</dt>
          <dd>{current.messageCount}</dd>
        </div>
        <div>
          <dt>Last activity</dt>
          <dd>{formatTime(current.updatedAt)}</dd>
        </div>
        {usage ? (
          <div>
            <dt>Tokens</dt>
            <dd data-testid="session-tokens">
              {usage.inputTokens.toLocaleString()} in · {usage.outputTokens.toLocaleString()} out
            </dd>
          </div>
        ) : null}
      </dl>
      <LiveStatus state={live} />
      {current.statusReason ? <p className="alert alert-warning">{current.statusReason.message}</p> : null}
      {mayWrite && current.status === 'running' && !current.interruptedAt ? <Interrupt sessionId={sessionId} /> : null}
      <ToolApprovals sessionId={sessionId} mayDecide={mayWrite} />
      {plan ? (
        <section aria-labelledby="plan-title" className="session-plan" data-testid="session-plan">
          <h2 id="plan-title">Plan</h2>
          <PlanList items={plan} />
        </section>
      ) : null}

      <section aria-labelledby="conversation-title" className="conversation">
        <h2 id="conversation-title">Conversation</h2>
        {history.hasNextPage ? (
          <button type="button" onClick={() => void history.fetchNextPage()} disabled={history.isFetchingNextPage}>
            {history.isFetchingNextPage ? 'Loading…' : 'Earlier messages'}
          </button>
        ) : null}
        {history.isPending ? <p className="loading">Loading messages…</p> : null}
        {history.error ? <ErrorMessage error={history.error} action="Reading the messages" /> : null}
        {history.data && messages.length === 0 ? (
          <p className="muted">No messages yet.{mayWrite ? ' Write the first below: an agent takes it from there.' : ''}</p>
        ) : null}
        <Messages messages={messages} live={writing} modelName={modelName} />
        {/* Said once when the agent starts writing or running a tool, not at every piece of text. */}
        <p role="status" className="visually-hidden">
          {liveStatus(writing)}
        </p>
      </section>
      {mayWrite ? <Composer sessionId={sessionId} /> : access === 'checking' ? null : <ReadOnly role={me.user.role} />}
    </Page>
  );
}

/** What screen readers hear of the agent's live work: what it does, not each piece of it. */
function liveStatus(writing: Writing): string {
  const tool = writing.running.at(-1);
  if (tool) return `The agent is running ${tool.toolName}.`;
  if (writing.current?.text) return 'The agent is writing an answer.';
  return writing.current?.thinking ? 'The agent is thinking.' : '';
}

/** Why there is no composer: the rules of the API (members change only their own sessions; guests none). */
function ReadOnly({ role }: { role: string }) {
  return (
    <p className="muted" data-testid="read-only">
      {role === 'guest'
        ? 'Guests read sessions; they cannot add messages.'
        : 'This session belongs to another member: you can read it, but only its owner, managers and owners can add messages, interrupt or answer approvals.'}
    </p>
  );
}

function LiveStatus({ state }: { state: LiveState }) {
  const text =
    state.status === 'live'
      ? 'Live: new messages and changes appear as they happen.'
      : state.status === 'connecting'
        ? 'Connecting to live updates…'
        : state.status === 'reconnecting'
          ? 'Live updates interrupted: reconnecting…'
          : 'No live updates.';
  return (
    <>
      <p className={`live live-${state.status}`} role="status">
        {text}
      </p>
      {state.status === 'stopped' ? <ErrorMessage error={state.error} action="Following the session" /> : null}
    </>
  );
}

function Interrupt({ sessionId }: { sessionId: string }) {
  const interrupt = useInterruptSession(sessionId);
  return (
    <div className="interrupt">
      <button type="button" className="danger" onClick={() => interrupt.mutate()} disabled={interrupt.isPending}>
        {interrupt.isPending ? 'Interrupting…' : 'Interrupt the agent'}
      </button>
      <span className="hint"> Stops the running turn; the agent keeps what it has done so far.</span>
      <ErrorMessage error={interrupt.error} action="Interrupting" />
    </div>
  );
}
