/**
 * Jest compiles every module again for every test file (each file has a module registry and a V8 context of its own):
 * the app, Nest, TypeORM and the rest, some 2,000 modules a file. V8's code cache does not depend on the context, so
 * the compiled code is kept here, keyed by the module's source, and handed back to V8 for the next file, in this
 * worker (in memory) and in the next ones (on disk, under node_modules/.cache). Loaded by setupFiles in each file's
 * context; `vm` is Node's own module there, shared by the worker, so the wrapper is put in place once per worker.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import vm from 'node:vm';

type CompileFunction = typeof vm.compileFunction;
type Compiled = ReturnType<CompileFunction> & { cachedData?: Buffer; cachedDataRejected?: boolean };

const WRAPPED = Symbol.for('agent-platform.code-cache');
/** Where the cache lies; global setup drops what no run has made for a week (the code it was made for is gone). */
export const CODE_CACHE_DIR = join(__dirname, '..', '..', 'node_modules', '.cache', 'jest-code-cache');

if (!(vm.compileFunction as CompileFunction & { [WRAPPED]?: true })[WRAPPED]) {
  const compileFunction = vm.compileFunction;
  const dir = join(CODE_CACHE_DIR, process.version);
  mkdirSync(dir, { recursive: true });
  const inMemory = new Map<string, Buffer>();

  const stored = (key: string): Buffer | undefined => {
    if (inMemory.has(key)) return inMemory.get(key);
    try {
      const data = readFileSync(join(dir, key));
      inMemory.set(key, data);
      return data;
    } catch {
      return undefined;
    }
  };

  const store = (key: string, data: Buffer) => {
    inMemory.set(key, data);
    // Written aside and renamed: another worker may be reading or writing the same key.
    const aside = join(dir, `${key}.${process.pid}`);
    try {
      writeFileSync(aside, data);
      renameSync(aside, join(dir, key));
    } catch {
      // A cache only: the next file compiles again.
    }
  };

  const cached = function (this: unknown, code: string, params: readonly string[] = [], options: vm.CompileFunctionOptions = {}): Compiled {
    // Code taken from the cache keeps the dynamic import() callback of the file that made it, gone with that file: a
    // module that imports dynamically (PGlite loading its WebAssembly) is compiled every time.
    if (options.cachedData !== undefined || options.produceCachedData || code.includes('import(')) return compileFunction.call(this, code, params, options);
    const key = createHash('sha1')
      .update(`${options.filename}\0${params.join(',')}\0`)
      .update(code)
      .digest('hex');
    const data = stored(key);
    const fn: Compiled = compileFunction.call(this, code, params, data ? { ...options, cachedData: data } : { ...options, produceCachedData: true });
    if (data && fn.cachedDataRejected) {
      // Made by another V8 or with other flags: dropped, and made anew by the next file.
      inMemory.delete(key);
      rmSync(join(dir, key), { force: true });
    } else if (!data && fn.cachedData) store(key, fn.cachedData);
    return fn;
  };
  vm.compileFunction = Object.assign(cached, { [WRAPPED]: true as const });
}
