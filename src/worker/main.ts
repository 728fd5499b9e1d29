import { readConfig, USAGE, WorkerConfigError } from './config';
import { Worker } from './worker';
import { WorkerClient } from './worker-client';

/** How long a stopping worker may take to leave its pool before it exits regardless. */
const STOP_GRACE_MS = 15_000;

function main(): void {
  let config: ReturnType<typeof readConfig>;
  try {
    config = readConfig(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof WorkerConfigError)) throw error;
    console.error(`${error.message}\n(agent-platform worker --help says how to run it.)`);
    process.exit(64);
  }
  if (config === 'help') {
    console.log(USAGE);
    return;
  }
  const log = (line: string) => console.log(`[worker ${new Date().toISOString()}] ${line}`);
  const worker = new Worker(config, new WorkerClient(config.url, log), log);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: leaving the pool`);
      worker.stop();
      // A second signal, or the grace running out, ends it at once: the lease then lapses by itself.
      setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
      process.once(signal, () => process.exit(0));
    });
  }
  worker.run().then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(`The worker stopped: ${error.message}`);
      process.exit(1);
    },
  );
}

main();
