'use strict';
/**
 * Jest's module runtime, except that in a worker's shared context (worker-context-environment.js) the app's modules
 * (src/) and packages (node_modules/) are loaded once, by the worker's first end-to-end file, and handed to the files
 * after it; the test files and test/utils are still loaded anew for each file. A class is then the same class in
 * every file of the worker, and a module's state (a cache, a counter) lives as long as the worker, as it would in a
 * server that starts several apps.
 */
const { join, sep } = require('node:path');
const Runtime = require('jest-runtime').default;
const { isWorkerContext } = require('./worker-context-environment');

/** Jest's own packages stay per file: `expect`, `jest` and the test framework belong to the file that runs. */
const PER_FILE = /\/node_modules\/(@jest\/|jest-|jest\/|expect\/)/;

/** The runtime of the worker's first end-to-end file: the shared modules require through it, so it is never torn down. */
let owner;

class WorkerModulesRuntime extends Runtime {
  constructor(config, environment, ...rest) {
    super(config, environment, ...rest);
    this.sharing = isWorkerContext(environment.getVmContext());
    // Anchored at the project: a checkout that lies under a folder named src must not share its tests too.
    this.sharedRoots = ['src', 'node_modules'].map((folder) => join(config.rootDir, folder) + sep);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the worker keeps this runtime for the files after it
    if (this.sharing && !owner) owner = this;
  }

  requireModuleOrMock(from, moduleName) {
    if (this.sharing && this !== owner && moduleName !== '@jest/globals') {
      const path = this.resolvedPath(from, moduleName);
      if (path && this.isShared(path)) return owner.requireModuleOrMock(from, moduleName);
    }
    return super.requireModuleOrMock(from, moduleName);
  }

  isShared(path) {
    return this.sharedRoots.some((root) => path.startsWith(root)) && !PER_FILE.test(path);
  }

  resolvedPath(from, moduleName) {
    try {
      return this._resolution.resolveCjs(from, moduleName);
    } catch {
      return undefined; // a core module, or one that does not resolve: Jest's own path reports it
    }
  }

  teardown() {
    if (this !== owner) return super.teardown();
    // Kept as if inside a test: a shared module may still require lazily during a later file.
    this.enterTestCode();
  }
}

module.exports = WorkerModulesRuntime;
