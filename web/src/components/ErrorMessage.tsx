import { ApiProblem } from '../api/client';

/** An error as the API words it (title, detail) with the request id to quote; anything else in plain words. */
export function ErrorMessage({ error, action }: { error: unknown; action?: string }) {
  if (!error) return null;
  const problem = error instanceof ApiProblem ? error : null;
  const title = problem ? problem.title : 'Could not reach the server';
  const detail = problem ? problem.detail : `${error instanceof Error ? error.message : String(error)}. Check your connection and try again.`;
  return (
    <div className="alert alert-error" role="alert">
      <p className="alert-title">
        {action ? `${action}: ` : ''}
        {title}
        {problem ? <span className="status"> ({problem.status})</span> : null}
      </p>
      <p>{detail}</p>
      {problem?.requestId ? (
        <p className="request-id">
          Request id <code>{problem.requestId}</code> (quote it when reporting this)
        </p>
      ) : null}
    </div>
  );
}
