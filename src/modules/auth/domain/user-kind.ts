/** A person, or a service account: a user that automation acts as, which computers may be created for. */
export enum UserKind {
  Human = 'human',
  ServiceAccount = 'service_account',
}

export const USER_KINDS: readonly UserKind[] = [UserKind.Human, UserKind.ServiceAccount];
