import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { setNonce } from 'get-nonce';
import { StrictMode, Suspense, useEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes, useLocation } from 'react-router';
import { ApiProblem } from './api/client';
import { AuthProvider, useAuth, useMe } from './auth/auth';
import { Layout } from './components/Layout';
import NotFound from './pages/NotFound';
import NotForYourRole from './pages/NotForYourRole';
import SignIn from './pages/SignIn';
import { mayOpen, PAGES, type ConsolePage } from './routes';
import { applyTheme, storedTheme } from './theme';
import './styles.css';

// The dialog's scroll lock injects a <style>: the server's Content-Security-Policy allows it by this nonce only.
const nonce = document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content;
if (nonce && !nonce.startsWith('{{')) setNonce(nonce);
applyTheme(storedTheme());

/** A credential that stops working mid-session (revoked, expired, user removed) signs the tab out. */
let onUnauthorized: () => void = () => undefined;
const signOutOn401 = (error: unknown) => {
  if (error instanceof ApiProblem && error.status === 401) onUnauthorized();
};

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: signOutOn401 }),
  mutationCache: new MutationCache({ onError: signOutOn401 }),
  defaultOptions: {
    queries: {
      // A 4xx will answer the same again; network trouble and 5xx are worth two more tries.
      retry: (failures, error) => failures < 2 && !(error instanceof ApiProblem && error.status < 500),
      refetchOnWindowFocus: false,
      staleTime: 10_000,
    },
  },
});

function SignedIn() {
  const { state, signOut } = useAuth();
  const location = useLocation();
  useEffect(() => {
    onUnauthorized = () => signOut('Your key stopped working (revoked, expired, or its user removed). Sign in again.');
  }, [signOut]);
  if (state.status === 'loading') return <p className="loading">Loading…</p>;
  if (state.status === 'signed-out') return <Navigate to="/sign-in" replace state={{ from: location.pathname + location.search }} />;
  return <Layout />;
}

function Guarded({ page }: { page: ConsolePage }) {
  const me = useMe();
  const Component = page.component;
  return mayOpen(page, me.user.role) ? <Component /> : <NotForYourRole label={page.label} />;
}

function Console() {
  return (
    <Routes>
      <Route path="/sign-in" element={<SignIn />} />
      <Route element={<SignedIn />}>
        {PAGES.map((page) => (
          <Route key={page.path} path={page.path} element={<Guarded page={page} />} />
        ))}
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter>
        <AuthProvider>
          <Suspense fallback={<p className="loading">Loading…</p>}>
            <Console />
          </Suspense>
        </AuthProvider>
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);
