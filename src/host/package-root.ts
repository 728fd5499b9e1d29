import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The folder of the package that holds `from` (this file's folder by default): the nearest one above it with a
 * package.json. Found by walking up rather than by a fixed number of `..`, which would be wrong the day a file moves
 * (and differs between `src/` under ts-jest and the built `dist/`).
 */
export function packageRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`No package.json in ${from} or any folder above it`);
  }
}
