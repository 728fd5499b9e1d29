/** Every PostgreSQL advisory lock the platform takes, in one place so ids never collide. */
export enum AdvisoryLock {
  Migrations = 7_345_001,
}
