import { useEffect, useId, useState } from 'react';
import type { Schemas } from '../api/client';
import { useDecideToolApproval, useToolApprovals } from '../api/sessions';
import { ErrorMessage } from '../components/ErrorMessage';
import { formatTime } from '../format';

type Approval = Schemas['ToolApproval'];

/** Tool calls waiting for a person: tool, summary, deadline; Allow / Deny with an optional message. Gone once resolved or expired. */
export function ToolApprovals({ sessionId, mayDecide }: { sessionId: string; mayDecide: boolean }) {
  const approvals = useToolApprovals(sessionId);
  const pending = approvals.data?.toolApprovals ?? [];
  const now = useNow(pending.length > 0);
  const waiting = pending.filter((approval) => approval.status === 'pending' && approval.expiresAt > now);
  if (approvals.error) return <ErrorMessage error={approvals.error} action="Reading the tool approvals" />;
  if (waiting.length === 0) return null;
  return (
    <section className="approvals" aria-labelledby="approvals-title">
      <h2 id="approvals-title">Waiting for your approval</h2>
      <ul>
        {waiting.map((approval) => (
          <ApprovalItem key={approval.approvalId} approval={approval} mayDecide={mayDecide} />
        ))}
      </ul>
    </section>
  );
}

function ApprovalItem({ approval, mayDecide }: { approval: Approval; mayDecide: boolean }) {
  const id = useId();
  const [message, setMessage] = useState('');
  const decide = useDecideToolApproval(approval);
  return (
    <li className="approval" aria-labelledby={`${id}-title`}>
      <p id={`${id}-title`}>
        <strong>{approval.toolName}</strong>: <code>{approval.summary}</code>
      </p>
      <p className="hint">
        Asked {formatTime(approval.requestedAt)}; denied by itself at {formatTime(approval.expiresAt)} if nobody answers.
      </p>
      <details>
        <summary>Input</summary>
        <pre>{JSON.stringify(approval.input, null, 2)}</pre>
      </details>
      {mayDecide ? (
        <div className="approval-actions">
          <div className="field">
            <label htmlFor={`${id}-message`}>Message to the agent (optional)</label>
            <input id={`${id}-message`} value={message} onChange={(event) => setMessage(event.target.value)} maxLength={2000} />
          </div>
          <button
            type="button"
            className="primary"
            disabled={decide.isPending}
            onClick={() => decide.mutate({ decision: 'allow', message })}
            aria-label={`Allow ${approval.toolName}: ${approval.summary}`}
          >
            Allow
          </button>
          <button
            type="button"
            className="danger"
            disabled={decide.isPending}
            onClick={() => decide.mutate({ decision: 'deny', message })}
            aria-label={`Deny ${approval.toolName}: ${approval.summary}`}
          >
            Deny
          </button>
        </div>
      ) : null}
      <ErrorMessage error={decide.error} action="Answering" />
    </li>
  );
}

function useNow(active: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}
