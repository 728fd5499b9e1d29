import { lazy, type ComponentType, type LazyExoticComponent } from 'react';
import type { Role } from './api/client';

/**
 * The console's pages for signed-in users: one entry per page. Add a page here and it gets its route, its place in
 * the navigation (for the roles named), its lazy-loaded code (so the first load stays small) and its role check.
 */
export interface ConsolePage {
  /** A React Router path. */
  path: string;
  /** The page's name in the navigation. */
  label: string;
  component: LazyExoticComponent<ComponentType>;
  /** Who may open it (every role when absent); others see a page saying so, and no link to it. */
  roles?: readonly Role[];
  /** Listed in the main navigation (a detail page, such as one session, is not). */
  inNav?: boolean;
  /** What the page is for, in a line: the overview's card for it. */
  summary?: string;
}

export const ADMINS: readonly Role[] = ['owner', 'manager'];
/** Guests get 403 on every computers route. */
export const COMPUTER_USERS: readonly Role[] = ['owner', 'manager', 'member'];

export const PAGES: readonly ConsolePage[] = [
  // In the navigation's order: the work, then the organization's settings.
  { path: '/', label: 'Overview', component: lazy(() => import('./pages/Overview')), inNav: true },
  {
    path: '/sessions',
    label: 'Sessions',
    component: lazy(() => import('./pages/Sessions')),
    inNav: true,
    summary: "Follow agents' work live, send messages and files, answer tool approvals.",
  },
  { path: '/sessions/:sessionId', label: 'Session', component: lazy(() => import('./pages/SessionView')) },
  {
    path: '/computers',
    label: 'Computers',
    component: lazy(() => import('./pages/Computers')),
    roles: COMPUTER_USERS,
    inNav: true,
    summary: 'The machines agents work on: provisioning, agent tokens, how to run an agent.',
  },
  { path: '/computers/:computerId', label: 'Computer', component: lazy(() => import('./pages/ComputerDetail')), roles: COMPUTER_USERS },
  {
    path: '/readiness',
    label: 'Readiness',
    component: lazy(() => import('./pages/Readiness')),
    inNav: true,
    summary: 'How ready each repository is for agents, criterion by criterion, and its trend.',
  },
  {
    path: '/analytics',
    label: 'Analytics',
    component: lazy(() => import('./pages/analytics/Analytics')),
    roles: ADMINS,
    inNav: true,
    summary: 'Tokens by model, active users, tool use and languages over a range of days.',
  },
  {
    path: '/members',
    label: 'Members',
    component: lazy(() => import('./pages/Members')),
    roles: ADMINS,
    inNav: true,
    summary: 'Who belongs to the organization, with which role; service accounts and their keys.',
  },
  {
    path: '/worker-pools',
    label: 'Worker pools',
    component: lazy(() => import('./pages/WorkerPools')),
    roles: ADMINS,
    inNav: true,
    summary: 'Machines running agent-platform worker that managed computers run on: pools, enrollment tokens, workers.',
  },
  { path: '/worker-pools/:poolId', label: 'Worker pool', component: lazy(() => import('./pages/WorkerPoolDetail')), roles: ADMINS },
  {
    path: '/settings/api-keys',
    label: 'API keys',
    component: lazy(() => import('./pages/ApiKeys')),
    inNav: true,
    summary: 'Keys for the API and for agents: create, see when each was used, revoke.',
  },
  {
    path: '/settings/controls',
    label: 'Controls',
    component: lazy(() => import('./pages/controls/EnterpriseControls')),
    roles: ADMINS,
    inNav: true,
    summary: "The organization's enterprise controls, their history and who changed what.",
  },
  { path: '/settings/controls/history', label: 'Controls history', component: lazy(() => import('./pages/controls/ControlsHistory')), roles: ADMINS },
];

export function mayOpen(page: ConsolePage, role: Role): boolean {
  return !page.roles || page.roles.includes(role);
}

export function navigationFor(role: Role): ConsolePage[] {
  return PAGES.filter((page) => page.inNav && mayOpen(page, role));
}
