import { useMutation } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { useCompleteSetup, useSetupStatus } from '../api/auth';
import type { Schemas } from '../api/client';
import { useAuth } from '../auth/auth';
import { ErrorMessage } from '../components/ErrorMessage';
import { ThemeToggle } from '../components/Layout';
import { OneTimeSecret } from '../components/OneTimeSecret';
import { Page } from '../components/Page';

/** Sign in with an API key, or, on a server with no organization yet, make the first one and its owner. */
export default function SignIn() {
  const { state } = useAuth();
  const location = useLocation();
  const setup = useSetupStatus();
  const [created, setCreated] = useState<Schemas['SetupResultView'] | null>(null);
  const from = (location.state as { from?: string } | null)?.from ?? '/';

  if (state.status === 'signed-in' && !created) return <Navigate to={from} replace />;
  return (
    <div className="sign-in-frame">
      <div className="sign-in-top">
        <span className="brand">Agent Platform</span>
        <ThemeToggle />
      </div>
      <main id="main" className="sign-in" tabIndex={-1}>
        {created ? (
          <FirstKey result={created} />
        ) : setup.isPending ? (
          <p className="loading">Loading…</p>
        ) : setup.data?.needed ? (
          <FirstRunSetup onDone={setCreated} />
        ) : (
          <KeySignIn reason={state.status === 'signed-out' ? state.reason : undefined} />
        )}
        {setup.error ? <ErrorMessage error={setup.error} action="Checking whether this server is set up" /> : null}
      </main>
    </div>
  );
}

function KeySignIn({ reason }: { reason?: string }) {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const location = useLocation();
  const id = useId();
  const [key, setKey] = useState('');
  const attempt = useMutation({
    mutationFn: (value: string) => signIn(value),
    onSuccess: () => navigate((location.state as { from?: string } | null)?.from ?? '/', { replace: true }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    attempt.mutate(key);
  };
  return (
    <Page
      title="Sign in"
      intro={
        <p>
          Paste an API key of yours (<code>apk_…</code>). It stays in this tab only and is forgotten when you close it or sign out.
        </p>
      }
    >
      {reason ? (
        <p className="alert alert-info" role="status">
          {reason}
        </p>
      ) : null}
      <form onSubmit={submit} className="form" noValidate>
        <div className="field">
          <label htmlFor={`${id}-key`}>API key</label>
          <input
            id={`${id}-key`}
            type="password"
            autoComplete="off"
            spellCheck={false}
            required
            value={key}
            onChange={(event) => setKey(event.target.value)}
            aria-describedby={`${id}-hint`}
          />
          <p id={`${id}-hint`} className="hint">
            No key? An owner or manager of your organization can give you one, or the server's operator can make one with <code>npm run cli -- key:create</code>
            .
          </p>
        </div>
        <ErrorMessage error={attempt.error} action="Signing in" />
        <button type="submit" className="primary" disabled={attempt.isPending || key.trim() === ''}>
          {attempt.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </Page>
  );
}

function FirstRunSetup({ onDone }: { onDone: (result: Schemas['SetupResultView']) => void }) {
  const id = useId();
  const [form, setForm] = useState({ setupToken: '', slug: '', organization: '', email: '', name: '' });
  const field = (name: keyof typeof form) => ({
    id: `${id}-${name}`,
    value: form[name],
    onChange: (event: { target: { value: string } }) => setForm({ ...form, [name]: event.target.value }),
  });
  const complete = useCompleteSetup({ onSuccess: onDone });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    complete.mutate({
      setupToken: form.setupToken.trim(),
      organization: { slug: form.slug.trim(), name: form.organization.trim() },
      owner: { email: form.email.trim(), name: form.name.trim() },
    });
  };
  return (
    <Page
      title="Set up this server"
      intro={<p>This server has no organization yet. Make the first one and its owner; you will get the owner's first API key and be signed in with it.</p>}
    >
      <form onSubmit={submit} className="form" noValidate>
        <div className="field">
          <label htmlFor={`${id}-setupToken`}>Setup token</label>
          <input {...field('setupToken')} type="password" autoComplete="off" spellCheck={false} required aria-describedby={`${id}-token-hint`} />
          <p id={`${id}-token-hint`} className="hint">
            The server printed it in its log when it started (<code>setup_…</code>); it works until the first organization exists.
          </p>
        </div>
        <fieldset>
          <legend>Organization</legend>
          <div className="field">
            <label htmlFor={`${id}-organization`}>Name</label>
            <input {...field('organization')} required autoComplete="organization" />
          </div>
          <div className="field">
            <label htmlFor={`${id}-slug`}>Short name (slug)</label>
            <input {...field('slug')} required spellCheck={false} aria-describedby={`${id}-slug-hint`} />
            <p id={`${id}-slug-hint`} className="hint">
              Lower-case letters, digits and -, such as <code>acme</code>.
            </p>
          </div>
        </fieldset>
        <fieldset>
          <legend>Owner (you)</legend>
          <div className="field">
            <label htmlFor={`${id}-name`}>Name</label>
            <input {...field('name')} required autoComplete="name" />
          </div>
          <div className="field">
            <label htmlFor={`${id}-email`}>Email</label>
            <input {...field('email')} type="email" required autoComplete="email" />
          </div>
        </fieldset>
        <ErrorMessage error={complete.error} action="Setting up" />
        <button type="submit" className="primary" disabled={complete.isPending}>
          {complete.isPending ? 'Setting up…' : 'Create the organization'}
        </button>
      </form>
    </Page>
  );
}

function FirstKey({ result }: { result: Schemas['SetupResultView'] }) {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const enter = useMutation({ mutationFn: () => signIn(result.apiKey.key), onSuccess: () => navigate('/', { replace: true }) });
  return (
    <Page title={`${result.organization.name} is ready`}>
      <p>You are its owner, {result.owner.name}. This is your first API key: you sign in with it, and scripts use it to call the API.</p>
      <OneTimeSecret label="Your owner key" secret={result.apiKey.key} doneLabel="I have stored it: continue" onDone={() => enter.mutate()} />
      <ErrorMessage error={enter.error} action="Signing in" />
    </Page>
  );
}
