/** An admin changed the organization's enterprise controls: `revision` is now in force. */
export interface ControlsRevisedData {
  revision: number;
  userId: string;
  /** The top-level settings the revision changed. */
  changedSettings: string[];
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'controls.revised': ControlsRevisedData;
  }
}
