import type { StreamState } from '../api/event-stream';

const TEXT: Record<StreamState, string> = {
  connecting: 'Connecting to live updates…',
  live: 'Live: changes appear as they happen.',
  reconnecting: 'Live updates interrupted: reconnecting…',
  stopped: 'Live updates are off (the server refused the stream): reload the page to see changes.',
};

/** Whether the page follows the event stream. Not a live region: its changes are not worth an announcement. */
export function LiveState({ state }: { state: StreamState }) {
  return (
    <p className={`live live-${state}`} data-state={state}>
      {TEXT[state]}
    </p>
  );
}
