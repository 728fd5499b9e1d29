import { validationError } from '../../../platform/http/validation';

/** A revision's entity tag, as ETag answers it. */
export function etagOf(revision: number): string {
  return `"${revision}"`;
}

/**
 * The revisions an If-Match header accepts (RFC 9110 §13.1.1): absent or `*`, any (undefined);
 * otherwise the listed tags, `"3"` or a bare `3`. Weak tags (`W/"3"`) never match a strong
 * comparison, so they accept nothing. Anything else is a 400.
 */
export function parseIfMatch(header: string | undefined): number[] | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const accepted: number[] = [];
  for (const tag of header.split(',').map((part) => part.trim())) {
    const match = /^(W\/)?"(\d{1,10})"$|^(\d{1,10})$/.exec(tag);
    if (!match) {
      throw validationError([{ field: 'If-Match', message: 'must be the ETag of a revision, e.g. "3" (as GET answers it), or *' }]);
    }
    if (!match[1]) accepted.push(Number(match[2] ?? match[3]));
  }
  return accepted;
}
