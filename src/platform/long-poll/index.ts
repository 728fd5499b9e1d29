export { LongPoll, WaitRoom } from './wait-room';
export type { ArrivalMatch, WaitOutcome } from './wait-room';
