import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { AppConfig } from '../../config/app-config';

/** The folder the server runs from (its code, package.json, node_modules): three levels up from src/ or dist/platform/http. */
const PROJECT_DIR = resolve(__dirname, '..', '..', '..');

/**
 * Takes the server's own details out of text that reaches a client: error details, provisioning step errors and
 * logs, directories of a computer. Its folders (COMPUTERS_DIR, DATA_DIR, the project's) become their names, and
 * its host name `<server-host>`, so an attacker provoking errors learns nothing of the host's layout. The full
 * text stays in the server's log.
 */
export class ServerDetails {
  private readonly paths: Array<[RegExp, string]>;
  private readonly host: RegExp | null;

  constructor(config: Pick<AppConfig, 'computersDir' | 'dataDir'>, host = hostname()) {
    const paths: Array<[string, string]> = [
      [config.computersDir, '$COMPUTERS_DIR'],
      [config.dataDir, '$DATA_DIR'],
      [PROJECT_DIR, '<server>'],
      [process.cwd(), '<server>'],
    ];
    // The longest first: COMPUTERS_DIR usually lies inside DATA_DIR, which may lie inside the project. A path counts
    // only where it starts one (not inside a URL or a longer path: a project in /app leaves https://x.example/app alone).
    this.paths = paths
      .filter(([path]) => path.length > 1)
      .sort(([a], [b]) => b.length - a.length)
      .map(([path, name]) => [new RegExp(`(?<![\\w.~-])${escapeRegExp(path)}(?![\\w-]|\\.\\w)`, 'g'), name]);
    this.host = host ? new RegExp(`(?<![\\w.-])${escapeRegExp(host)}(?![\\w-]|\\.\\w)`, 'gi') : null;
  }

  redact(text: string): string {
    let out = text;
    for (const [path, name] of this.paths) out = out.replace(path, name);
    return this.host ? out.replace(this.host, '<server-host>') : out;
  }

  /** Every string in a JSON-like value, redacted (error metadata). */
  redactDeep<T>(value: T): T {
    if (typeof value === 'string') return this.redact(value) as T;
    if (Array.isArray(value)) return value.map((item: unknown) => this.redactDeep(item)) as T;
    if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.redactDeep(item)])) as T;
    }
    return value;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
