/** Where host code writes its log: the server passes a Nest `Logger`, a worker its own. */
export interface HostLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** The security log's actions that host code raises. */
export type HostSecurityAction = 'sandbox.egress_refused' | 'sandbox.limit_exceeded' | 'quota.exceeded';

/** One line of the security log (the server's `logSecurityEvent`): ids, names and numbers only in `details`. */
export type HostSecurityLog = (
  action: HostSecurityAction,
  actor: { organizationId: string },
  details: Record<string, string | number | boolean | null | undefined>,
) => void;
