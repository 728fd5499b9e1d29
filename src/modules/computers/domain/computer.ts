/** `byom` registers an existing machine; every other provider prepares one (managed). */
export const BYOM = 'byom';
/** The managed provider this server ships: a workspace prepared on the server's own host. */
export const LOCAL_PROVIDER = 'local';
export const PROVIDERS = [BYOM, LOCAL_PROVIDER] as const;
export type Provider = (typeof PROVIDERS)[number];

export enum OwnerPrincipalKind {
  User = 'user',
  ServiceAccount = 'service_account',
}

/** What a stored agent token's encryption is bound to: the envelope decrypts for this computer only. */
export function agentTokenContext(computerId: string): string {
  return `computer-agent-token:${computerId}`;
}

/** Templates the `local` provider offers: `blank` is an empty workspace. */
export const LOCAL_TEMPLATES = ['blank'] as const;

/**
 * Where a managed computer starts from: one of the provider's templates, or (our second variant)
 * a copy of an existing computer's set-up, its repos and autoInstallDeps.
 */
export type ComputerSource = { kind: 'template'; templateId: string } | { kind: 'computer'; computerId: string };

export const NAME_LIMITS = { min: 1, max: 63 } as const;
export { REPO_LIMITS } from '../../../host/repo-location';
