/** A readiness report was stored. */
export interface ReadinessReportCreatedData {
  reportId: string;
  repoId: string;
  repoUrl: string;
  level: number;
  uploadedBy: string;
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'readiness.report_created': ReadinessReportCreatedData;
  }
}
