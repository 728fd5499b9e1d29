const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** Unix ms as the reader's local date and time; `never` for null. */
export function formatTime(ms: number | null | undefined, never = 'Never'): string {
  return ms === null || ms === undefined ? never : dateTime.format(new Date(ms));
}

export const ROLE_LABELS: Record<string, string> = { owner: 'Owner', manager: 'Manager', member: 'Member', guest: 'Guest' };
