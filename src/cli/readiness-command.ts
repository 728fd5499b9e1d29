import { evaluateRepository } from '../modules/readiness/evaluator/evaluate';
import { NotARepositoryError } from '../modules/readiness/evaluator/git';
import { summarize } from '../modules/readiness/evaluator/summary';
import { UsageError } from './commands';

export const READINESS_USAGE = `Usage: npm run cli -- readiness evaluate <path> [--json] [--upload [--url <base url>] [--api-key <key>]]

  Evaluates the git repository at <path> (no network, no model) and prints a summary, or with
  --json the report itself. --upload sends the report to {app_url}/api/organization/maturity-level-reports;
  --url and --api-key default to AGENT_PLATFORM_URL and AGENT_PLATFORM_API_KEY.`;

/** `readiness evaluate ...`: runs without a database. Returns the exit code. */
export async function runReadiness(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [verb, ...rest] = args;
  if (verb !== 'evaluate') throw new UsageError(READINESS_USAGE);
  const options = parseOptions(rest);
  const url = options.url ?? env.AGENT_PLATFORM_URL;
  const apiKey = options.apiKey ?? env.AGENT_PLATFORM_API_KEY;
  if (options.upload && (!url || !apiKey))
    throw new UsageError(`--upload needs --url and --api-key (or AGENT_PLATFORM_URL and AGENT_PLATFORM_API_KEY).\n\n${READINESS_USAGE}`);
  let result;
  try {
    result = await evaluateRepository(options.path);
  } catch (error) {
    if (error instanceof NotARepositoryError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  console.log(options.json ? JSON.stringify(result.report, null, 2) : summarize(result));
  if (!options.upload) return 0;
  const response = await fetch(`${url!.replace(/\/+$/, '')}/api/organization/maturity-level-reports`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(result.report),
  });
  const body = (await response.json().catch(() => ({}))) as { reportId?: string; detail?: string };
  if (!response.ok) {
    console.error(`Upload refused (${response.status}): ${body.detail ?? response.statusText}`);
    return 1;
  }
  console.error(`Uploaded as report ${body.reportId}`);
  return 0;
}

function parseOptions(args: string[]): { path: string; json: boolean; upload: boolean; url?: string; apiKey?: string } {
  const options: { path?: string; json: boolean; upload: boolean; url?: string; apiKey?: string } = { json: false, upload: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--json') options.json = true;
    else if (arg === '--upload') options.upload = true;
    else if (arg === '--url' || arg === '--api-key') {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value.\n\n${READINESS_USAGE}`);
      if (arg === '--url') options.url = value;
      else options.apiKey = value;
    } else if (arg.startsWith('--') || options.path !== undefined) throw new UsageError(`Unexpected argument "${arg}".\n\n${READINESS_USAGE}`);
    else options.path = arg;
  }
  if (options.path === undefined) throw new UsageError(READINESS_USAGE);
  return { ...options, path: options.path };
}
