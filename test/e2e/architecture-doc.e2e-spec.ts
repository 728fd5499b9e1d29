import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { EVENT_TYPES } from '../../src/modules/events';
import { DurableListeners } from '../../src/platform/events';
import { JobRunner } from '../../src/platform/jobs';
import { startTestApp, TestApp } from '../utils/test-app';

const DOC = readFileSync(join(__dirname, '../../docs/architecture.md'), 'utf8');

/** The rows of the Markdown table under `heading`, as cells. */
function table(heading: string): string[][] {
  const start = DOC.indexOf(`## ${heading}`);
  const rows = DOC.slice(start)
    .split('\n## ')[0]
    .split('\n')
    .filter((line) => line.startsWith('|'));
  return rows.slice(2).map((row) =>
    row
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

/** `a`, `b` → [a, b]; "every type" → every type. */
const typesIn = (cell: string) => (cell === 'every type' ? [...EVENT_TYPES].sort() : [...cell.matchAll(/`([a-z_.]+)`/g)].map((m) => m[1]).sort());

/** docs/architecture.md says who listens to what: it must be what the running application registers. */
describe('docs/architecture.md', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });

  afterAll(() => t.close());

  it('lists every durable listener with its events, and no other', () => {
    const documented = table('Who listens to what')
      .filter((row) => row[1] === 'durable')
      .map((row) => ({ name: row[0].replaceAll('`', ''), types: typesIn(row[3]) }));
    const registered = t.app
      .get(DurableListeners)
      .registered()
      .map(({ name, types }) => ({ name, types: [...types].sort() }));
    expect(documented.sort((a, b) => a.name.localeCompare(b.name))).toEqual(registered.sort((a, b) => a.name.localeCompare(b.name)));
  });

  it('lists every event type that has a live listener on this instance, and no other', () => {
    const emitter = t.app.get(EventEmitter2);
    const live = EVENT_TYPES.filter((type) => emitter.listenerCount(type) > 0).sort();
    const documented = [
      ...new Set(
        table('Who listens to what')
          .filter((row) => row[1] === 'live')
          .flatMap((row) => typesIn(row[3])),
      ),
    ].sort();
    expect(documented).toEqual(live);
  });

  it('lists every background job the running application registers', () => {
    const documented = table('Background jobs').map((row) => row[0].replaceAll('`', ''));
    const registered = t.app.get(JobRunner).registered();
    expect(registered.length).toBeGreaterThan(5);
    expect(documented).toEqual(expect.arrayContaining(registered));
    expect(new Set(documented).size).toBe(documented.length);
  });

  it('lists every event type under the module that raises it, once', () => {
    const documented = table('Who raises what').flatMap((row) => typesIn(row[1]));
    expect([...documented].sort()).toEqual([...EVENT_TYPES].sort());
  });
});
