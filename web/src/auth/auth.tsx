import { useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { readMe } from '../api/auth';
import { setCredential, type Me } from '../api/client';

/** sessionStorage only: the key lives as long as the tab, is never written to localStorage, a cookie or a URL. */
const STORAGE_KEY = 'agent-platform.api-key';

export type AuthState = { status: 'loading' } | { status: 'signed-out'; reason?: string } | { status: 'signed-in'; me: Me };

interface Auth {
  state: AuthState;
  /** Checks the key with the API (`GET /api/v0/me`); throws the API's problem when it does not work. */
  signIn(key: string): Promise<Me>;
  signOut(reason?: string): void;
  /** Reads who the key is again (after a change of role, say). */
  refresh(): Promise<void>;
}

const AuthContext = createContext<Auth | null>(null);

function readStoredKey(): string | null {
  try {
    return window.sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

async function whoIs(key: string): Promise<Me> {
  setCredential(key);
  try {
    return await readMe();
  } catch (error) {
    setCredential(null);
    throw error;
  }
}

/** Who is signed in in this tab: the API key it signs in with and who that key is (not an agent session: see api/sessions.ts). */
export function AuthProvider({ children }: { children: ReactNode }) {
  const queries = useQueryClient();
  const [state, setState] = useState<AuthState>(() => (readStoredKey() ? { status: 'loading' } : { status: 'signed-out' }));

  const signOut = useCallback(
    (reason?: string) => {
      window.sessionStorage.removeItem(STORAGE_KEY);
      setCredential(null);
      queries.clear();
      setState({ status: 'signed-out', reason });
    },
    [queries],
  );

  const signIn = useCallback(async (key: string) => {
    const me = await whoIs(key.trim());
    window.sessionStorage.setItem(STORAGE_KEY, key.trim());
    setState({ status: 'signed-in', me });
    return me;
  }, []);

  const refresh = useCallback(async () => {
    const key = readStoredKey();
    if (!key) return;
    setState({ status: 'signed-in', me: await whoIs(key) });
  }, []);

  // A key kept from earlier in this tab: check it still works.
  useEffect(() => {
    const key = readStoredKey();
    if (!key) return;
    whoIs(key).then(
      (me) => setState({ status: 'signed-in', me }),
      () => signOut('Your key no longer works (revoked, expired, or its user removed). Sign in with another.'),
    );
  }, [signOut]);

  const value = useMemo(() => ({ state, signIn, signOut, refresh }), [state, signIn, signOut, refresh]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error('useAuth outside AuthProvider');
  return auth;
}

/** Who is signed in; only inside pages the router shows to signed-in users. */
export function useMe(): Me {
  const { state } = useAuth();
  if (state.status !== 'signed-in') throw new Error('useMe on a page for signed-in users only');
  return state.me;
}
