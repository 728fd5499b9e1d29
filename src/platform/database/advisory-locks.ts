/** Every PostgreSQL advisory lock the platform takes, in one place so ids never collide. */
export enum AdvisoryLock {
  Migrations = 7_345_001,
  /** With the organization's id hashed as the second key: one change of its controls at a time. */
  EnterpriseControls = 7_345_002,
  /** Moving the analytics rollup's watermark: one instance at a time. */
  AnalyticsWatermark = 7_345_003,
  /**
   * With the computer's id hashed as the second key, held at session level on a dedicated
   * connection: the instance that runs the computer's local agent, for as long as it runs it.
   */
  LocalAgent = 7_345_004,
  /** With the organization's id hashed as the second key: counting its computers against its quotas and adding one, one at a time. */
  ComputerQuotas = 7_345_005,
  /** With the organization's id hashed as the second key: changing its members' roles, one change at a time (the last owner stays). */
  Members = 7_345_006,
  /** The first-run setup: one organization made from an empty database, whatever the instances. */
  FirstRun = 7_345_007,
  /** Numbering committed events: one sequencer run at a time, whatever the instances. */
  EventSequencer = 7_345_008,
  /** With the organization's id hashed as the second key: counting and naming its worker pools, one change at a time. */
  WorkerPools = 7_345_009,
  /** Placing an organization's waiting computers on its workers: one placer at a time counts each worker's load. */
  WorkerPlacement = 7_345_010,
}
