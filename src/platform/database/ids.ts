import { v7 as uuidv7 } from 'uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Time-ordered (UUIDv7: 48 bits of milliseconds) and unguessable (74 random bits). */
export function newId(): string {
  return uuidv7();
}

/** Ids in paths are checked before they reach SQL: a malformed id is simply not found. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
