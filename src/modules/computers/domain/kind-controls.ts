import type { OrganizationControls } from '../../auth';

/** Which enterprise control keeps a computer kind from someone, and why, in words. */
export interface KindRefusal {
  control: 'managedComputersEnabled' | 'managedComputersAllowedEmails' | 'byomComputersEnabled' | 'byomComputersAllowedEmails';
  reason: 'disabled' | 'not_listed';
  detail: string;
}

/** The emails a kind is limited to (empty: everyone): the rule below reads an email only when there are some. */
export function allowedEmails(controls: OrganizationControls, managed: boolean): string[] {
  return managed ? controls.managedComputersAllowedEmails : controls.byomComputersAllowedEmails;
}

/**
 * The one rule of the computer-kind switches, for creating a computer and for a computer taking
 * work: the kind must be turned on, and when its email list is not empty, `email` (the creator, or
 * the computer's owner) must be on it, compared without case.
 */
export function kindRefusal(controls: OrganizationControls, managed: boolean, email: string): KindRefusal | null {
  const [enabled, kind] = managed ? [controls.managedComputersEnabled, 'Managed'] : [controls.byomComputersEnabled, 'BYOM'];
  const allowed = allowedEmails(controls, managed);
  if (!enabled) {
    return {
      control: managed ? 'managedComputersEnabled' : 'byomComputersEnabled',
      reason: 'disabled',
      detail: `${kind} computers are turned off for your organization.`,
    };
  }
  if (allowed.length > 0 && !allowed.some((listed) => listed.toLowerCase() === email.toLowerCase())) {
    return {
      control: managed ? 'managedComputersAllowedEmails' : 'byomComputersAllowedEmails',
      reason: 'not_listed',
      detail: `${kind} computers are limited to listed people`,
    };
  }
  return null;
}
