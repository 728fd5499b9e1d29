import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskUse } from './disk-use';

describe('DiskUse (usage.diskMb of a worker)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'disk-use-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("measures the computers' folder as the disk holds it, and again only once the figure is old", async () => {
    const use = new DiskUse(dir, 60_000);
    await use.measure();
    expect(use.mb()).toBe(0);
    // Random bytes: a file system that compresses or dedupes cannot shrink them.
    writeFileSync(
      join(dir, 'workspace.bin'),
      Buffer.alloc(5 * 1024 * 1024, 7).map(() => Math.floor(Math.random() * 256)),
    );
    // Measured a moment ago: the last figure stands, without a walk.
    expect(use.mb()).toBe(0);
    await use.measure();
    expect(use.mb()).toBeGreaterThanOrEqual(5);
    expect(use.mb()).toBeLessThan(7);
  });

  it('a folder not made yet is 0, not an error', async () => {
    const use = new DiskUse(join(dir, 'computers'));
    await use.measure();
    expect(use.mb()).toBe(0);
  });
});
