import type { ValueTransformer } from 'typeorm';

/** `pg` returns bigint as a string; the API speaks JSON numbers. Values stay below 2^53. */
export const bigintToNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
