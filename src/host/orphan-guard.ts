/**
 * Preloaded into every agent the server starts (`node --require`): when the server dies without
 * stopping it (SIGKILL, a crash), the agent stops too, instead of working on, unsupervised, beside
 * the agent the next server starts. Its parent changes then (the process is re-parented).
 */
const parent = process.ppid;

setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
}, 1_000).unref();

export {};
