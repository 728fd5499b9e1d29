import { ErrorMessage } from './ErrorMessage';

/** What ShowMore reads of a paged list (React Query's infinite query). */
interface PagedList {
  hasNextPage: boolean;
  fetchNextPage: () => Promise<unknown>;
  isFetchingNextPage: boolean;
  isFetchNextPageError: boolean;
  error: unknown;
}

/**
 * The button under a list that the API pages: the next page on demand, and why it failed if it did (the list above
 * stays as it was).
 */
export function ShowMore({ list, label, errorAction }: { list: PagedList; label: string; errorAction: string }) {
  return (
    <>
      {list.hasNextPage ? (
        <button type="button" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>
          {list.isFetchingNextPage ? 'Loading…' : label}
        </button>
      ) : null}
      {list.isFetchNextPageError ? <ErrorMessage error={list.error} action={errorAction} /> : null}
    </>
  );
}
