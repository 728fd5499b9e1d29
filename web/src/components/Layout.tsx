import { Suspense, useState, useSyncExternalStore } from 'react';
import { Link, NavLink, Outlet } from 'react-router';
import { useAuth, useMe } from '../auth/auth';
import { ROLE_LABELS } from '../format';
import { navigationFor } from '../routes';
import { applyTheme, storedTheme, type Theme } from '../theme';

/** The frame of every signed-in page: who you are, where you can go, the theme, sign out. */
export function Layout() {
  const me = useMe();
  const { signOut } = useAuth();
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          Agent Platform
        </Link>
        <nav aria-label="Main" className="main-nav">
          <ul>
            {navigationFor(me.user.role).map((page) => (
              <li key={page.path}>
                <NavLink to={page.path} end={page.path === '/'}>
                  {page.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who" role="group" aria-label="Signed in as">
          <span className="org" title={`Organization ${me.organization.slug}`}>
            {me.organization.name}
          </span>
          <span className={`role role-${me.user.role}`}>{ROLE_LABELS[me.user.role] ?? me.user.role}</span>
          <span className="name" title={me.user.email}>
            {me.user.name}
          </span>
          <ThemeToggle />
          <button type="button" onClick={() => signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p className="loading">Loading…</p>}>
          <Outlet />
        </Suspense>
      </main>
    </>
  );
}

const DARK_QUERY = '(prefers-color-scheme: dark)';
const subscribeToSystemTheme = (onChange: () => void) => {
  const query = window.matchMedia(DARK_QUERY);
  query.addEventListener('change', onChange);
  return () => query.removeEventListener('change', onChange);
};

/** Light or dark: the system's until chosen here (the choice is kept in localStorage, nothing else is). */
export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(storedTheme);
  const systemDark = useSyncExternalStore(subscribeToSystemTheme, () => window.matchMedia(DARK_QUERY).matches);
  const dark = theme === 'system' ? systemDark : theme === 'dark';
  const next = dark ? 'light' : 'dark';
  return (
    <button
      type="button"
      className="theme-toggle"
      title={`Switch to the ${next} theme`}
      onClick={() => {
        applyTheme(next);
        setTheme(next);
      }}
    >
      {next === 'dark' ? 'Dark theme' : 'Light theme'}
    </button>
  );
}
