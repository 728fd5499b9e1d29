import { useSearchParams } from 'react-router';
import type { Schemas } from '../../api/client';
import { useForgetMcpSignIn, useMcpSignIn, useStartMcpSignIn } from '../../api/controls';
import { ErrorMessage } from '../../components/ErrorMessage';
import { formatTime } from '../../format';

type Connection = Schemas['McpOAuthConnection'];

const STATUS_TEXT: Record<Connection['status'], string> = {
  not_connected: 'Not signed in',
  pending: 'Sign-in under way',
  connected: 'Signed in',
  reconnect_needed: 'Sign in again',
};

/**
 * The OAuth sign-ins of the organization's saved HTTP MCP servers: an admin signs in once per server, here, and the
 * relay sends its requests with the token from then on. Signing in leaves for the server's authorization server and
 * comes back to this page, whose query then says how it went (`mcpServer`, `mcpOAuth`, `reason`).
 */
export function McpSignIns({ servers }: { servers: string[] }) {
  const [search] = useSearchParams();
  const outcome = search.get('mcpOAuth');
  const returned = search.get('mcpServer');
  if (servers.length === 0) return null;
  return (
    <section className="mcp-sign-ins" aria-labelledby="mcp-sign-ins-heading">
      <h2 id="mcp-sign-ins-heading">MCP server sign-ins</h2>
      <p className="hint">
        An HTTP MCP server that asks for OAuth needs one sign-in by an Owner or Manager. Its tokens stay on this server, encrypted, and are refreshed here;
        agents reach the server through the relay and never hold them.
      </p>
      {outcome ? (
        <p role="status" className={`alert ${outcome === 'connected' ? 'alert-info' : 'alert-error'}`}>
          {outcome === 'connected'
            ? `Signed in to ${returned ?? 'the MCP server'}.`
            : `The sign-in${returned ? ` to ${returned}` : ''} failed: ${search.get('reason') ?? 'no reason given'}.`}
        </p>
      ) : null}
      <ul className="plugin-list">
        {servers.map((name) => (
          <ServerSignIn key={name} name={name} />
        ))}
      </ul>
    </section>
  );
}

function ServerSignIn({ name }: { name: string }) {
  const connection = useMcpSignIn(name);
  // The authorization server sends the browser back to /settings/controls.
  const signIn = useStartMcpSignIn(name, { onSuccess: (started) => window.location.assign(started.authorizationUrl) });
  const forget = useForgetMcpSignIn(name);
  const data = connection.data;
  return (
    <li className="plugin">
      <div className="plugin-head">
        <strong>{name}</strong>
        {data ? <span className="badge">{STATUS_TEXT[data.status]}</span> : null}
      </div>
      {connection.error ? <ErrorMessage error={connection.error} action={`Reading the sign-in of ${name}`} /> : null}
      {data ? (
        <>
          <p className="muted">
            {data.url}
            {data.connectedAt ? ` · signed in ${formatTime(Date.parse(data.connectedAt))}` : ''}
            {data.expiresAt ? ` · token until ${formatTime(Date.parse(data.expiresAt))}` : ''}
            {data.scope ? ` · scope ${data.scope}` : ''}
          </p>
          {data.problem ? <p className="alert alert-warning">{data.problem}</p> : null}
          <div className="toolbar">
            <button type="button" className="primary small" onClick={() => signIn.mutate()} disabled={signIn.isPending}>
              {data.status === 'connected' ? 'Sign in again' : 'Sign in'}
            </button>
            {data.status !== 'not_connected' ? (
              <button type="button" className="danger small" onClick={() => forget.mutate()} disabled={forget.isPending}>
                Forget the sign-in
              </button>
            ) : null}
          </div>
        </>
      ) : null}
      {signIn.error ? <ErrorMessage error={signIn.error} action={`Signing in to ${name}`} /> : null}
      {forget.error ? <ErrorMessage error={forget.error} action={`Forgetting the sign-in of ${name}`} /> : null}
    </li>
  );
}
