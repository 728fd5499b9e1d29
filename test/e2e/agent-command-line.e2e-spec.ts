import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const MAIN = resolve(__dirname, '..', '..', 'dist', 'agent', 'main.js');
const USAGE_START = '\n\nUsage: agent-platform-agent --url <base_url>';

/**
 * How the agent's two commands (the daemon, and `exec`) report a bad command line: the problem, then the usage, on
 * standard error, exit 64; nothing is started, so no server is needed.
 */
describe('agent-platform-agent, given a bad command line', () => {
  const home = mkdtempSync(join(tmpdir(), 'ap-agent-cli-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const agent = (args: string[], env: Record<string, string> = {}) => {
    const { status, stdout, stderr } = spawnSync(process.execPath, [MAIN, ...args], {
      cwd: home,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: home, AGENT_STATE_DIR: join(home, 'state'), ...env },
      timeout: 30_000,
    });
    return { status, stdout, stderr };
  };
  /** The problem, then the usage. */
  const usage = (problem: string | RegExp) => ({
    status: 64,
    stdout: '',
    stderr: expect.stringMatching(
      new RegExp(`^${typeof problem === 'string' ? problem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : problem.source}${USAGE_START}`),
    ),
  });

  it('the daemon: an unknown option, or no server URL', () => {
    expect(agent(['--url', 'http://127.0.0.1:9', '--nope'])).toEqual(usage(/Unknown option '--nope'[^\n]*/));
    expect(agent(['--workspace'])).toEqual(usage(/Option '--workspace <value>' argument missing/));
    expect(agent([])).toEqual(usage('The server URL (--url or AGENT_URL) is required.'));
  });

  it('exec: an unknown option, an output it does not print, other than one task', () => {
    expect(agent(['exec', '--nope', 'Do it.'])).toEqual(usage(/Unknown option '--nope'[^\n]*/));
    expect(agent(['exec', '--output', 'yaml', 'Do it.'])).toEqual(usage('--output must be one of text, json, stream-json, not "yaml".'));
    expect(agent(['exec', 'Do it.', 'And this.'])).toEqual(usage('exec takes one task (quote it; - reads it from standard input).'));
  });

  it('exec: a server without a token, or with a settings file', () => {
    expect(agent(['exec', '--url', 'http://127.0.0.1:9', 'Do it.'])).toEqual(
      usage('The agent token (AGENT_TOKEN, --token-file or AGENT_TOKEN_FILE) is required with --url.'),
    );
    expect(agent(['exec', '--url', 'http://127.0.0.1:9', '--settings', 'policy.json', 'Do it.'], { AGENT_TOKEN: 'cpt_x' })).toEqual(
      usage("--settings is for runs without a server: with --url, the organization's policy applies."),
    );
  });

  it('exec: an empty task, or a missing token file, is said alone (no usage), exit 64', () => {
    expect(agent(['exec', '  '])).toEqual({ status: 64, stdout: '', stderr: 'The task is empty.\n' });
    expect(agent(['exec', '--url', 'http://127.0.0.1:9', '--token-file', join(home, 'missing'), 'Do it.'])).toEqual({
      status: 64,
      stdout: '',
      stderr: expect.stringMatching(/^The token file \S+missing cannot be read: ENOENT[^\n]*\n$/),
    });
  });
});
