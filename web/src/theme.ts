/** Light, dark, or the system's (prefers-color-scheme); only this preference is kept in localStorage. */
export type Theme = 'light' | 'dark' | 'system';

const STORAGE_KEY = 'agent-platform.theme';

export function storedTheme(): Theme {
  const value = window.localStorage.getItem(STORAGE_KEY);
  return value === 'light' || value === 'dark' ? value : 'system';
}

export function applyTheme(theme: Theme): void {
  if (theme === 'system') {
    delete document.documentElement.dataset.theme;
    window.localStorage.removeItem(STORAGE_KEY);
  } else {
    document.documentElement.dataset.theme = theme;
    window.localStorage.setItem(STORAGE_KEY, theme);
  }
}
