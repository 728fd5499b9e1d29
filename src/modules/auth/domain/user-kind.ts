/** A person, or a service account: a user that automation acts as, which computers may be created for. */
export const UserKind = { Human: 'human', ServiceAccount: 'service_account' } as const;
export type UserKind = (typeof UserKind)[keyof typeof UserKind];

export const USER_KINDS: readonly UserKind[] = [UserKind.Human, UserKind.ServiceAccount];
