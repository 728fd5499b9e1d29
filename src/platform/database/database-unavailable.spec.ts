import { createServer } from 'node:net';
import { Client, DatabaseError } from 'pg';
import { QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable, isStorageFull } from './database-unavailable';

const databaseError = (code: string, message: string) => Object.assign(new DatabaseError(message, 0, 'error'), { code });

describe('isDatabaseUnavailable', () => {
  it('is true of a database refusing connections, as pg reports it', async () => {
    // A port that was just free: nothing listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const client = new Client({ host: '127.0.0.1', port, user: 'x', database: 'x' });
    const error = await client.connect().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    await client.end().catch(() => undefined);
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('is true of a lost connection and a shutting-down server, wrapped by TypeORM or not', () => {
    expect(isDatabaseUnavailable(databaseError('57P01', 'terminating connection due to administrator command'))).toBe(true);
    expect(isDatabaseUnavailable(databaseError('57P03', 'the database system is starting up'))).toBe(true);
    expect(isDatabaseUnavailable(databaseError('08006', 'connection failure'))).toBe(true);
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], new Error('Connection terminated unexpectedly')))).toBe(true);
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('Query runner already released'), { name: 'QueryRunnerAlreadyReleasedError' }))).toBe(true);
  });

  it('is false of a statement the database refused, and of anything else', () => {
    expect(isDatabaseUnavailable(databaseError('23505', 'duplicate key value violates unique constraint'))).toBe(false);
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1/0', [], databaseError('22012', 'division by zero')))).toBe(false);
    expect(isDatabaseUnavailable(databaseError('57014', 'canceling statement due to statement timeout'))).toBe(false);
    expect(isDatabaseUnavailable(new Error('Cannot read properties of undefined'))).toBe(false);
    expect(isDatabaseUnavailable('Connection terminated')).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});

describe('isStorageFull', () => {
  it("is true of a full disk, as the database reports it (disk_full) wrapped by TypeORM, or as Node's errno", () => {
    const full = databaseError('53100', 'could not extend file "base/5/16385": No space left on device');
    expect(isStorageFull(new QueryFailedError('INSERT', [], full))).toBe(true);
    expect(isStorageFull(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe(true);
    // A full disk is not a database that went away.
    expect(isDatabaseUnavailable(full)).toBe(false);
  });

  it('is false of other insufficient resources and of statements refused', () => {
    expect(isStorageFull(databaseError('53200', 'out of memory'))).toBe(false);
    expect(isStorageFull(databaseError('53300', 'sorry, too many clients already'))).toBe(false);
    expect(isStorageFull(databaseError('23505', 'duplicate key value violates unique constraint'))).toBe(false);
    expect(isStorageFull(undefined)).toBe(false);
  });
});
