import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { workspace, write } from '../../../test/utils/tool-workspace';
import { executeTool } from './execute';
import { CO_AUTHOR_TRAILER } from './git-hooks';
import { ToolContext } from './tool';

const git = (...args: string[]) => execFileSync('git', args, { cwd: workspace, encoding: 'utf8' });
const commit = async (includeCoAuthoredByAgent: boolean, message: string) => {
  const context: ToolContext = {
    workspace,
    policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [], includeCoAuthoredByAgent },
    signal: new AbortController().signal,
  };
  const quoted = message.replace(/'/g, `'\\''`);
  const result = await executeTool.run({ command: `echo x >> a.txt && git add a.txt && git commit -q -F - <<'EOF'\n${quoted}\nEOF` }, context);
  expect(result).toMatchObject({ isError: false });
  return git('log', '-1', '--format=%B').trim();
};

describe("The agent's commits and includeCoAuthoredByAgent", () => {
  beforeEach(() => {
    git('init', '-q');
    git('config', 'user.email', 'dev@example.com');
    git('config', 'user.name', 'Dev');
    write('a.txt', 'a\n');
  });

  it('on: a commit the model makes carries the co-author trailer once, after the message', async () => {
    expect(await commit(true, 'Add a')).toBe(`Add a\n\n${CO_AUTHOR_TRAILER}`);
    expect(await commit(true, `Add more\n\n${CO_AUTHOR_TRAILER}`)).toBe(`Add more\n\n${CO_AUTHOR_TRAILER}`);
  });

  it('off: no trailer, even one the model wrote itself; other trailers stay', async () => {
    expect(await commit(false, `Add a\n\nSigned-off-by: Dev <dev@example.com>\n${CO_AUTHOR_TRAILER}`)).toBe('Add a\n\nSigned-off-by: Dev <dev@example.com>');
  });

  it("the repository's own hooks still run, from .git/hooks or its core.hooksPath (husky's way), and can still refuse a commit", async () => {
    const hook = (folder: string, name: string, body: string) => {
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, name), `#!/bin/sh\n${body}\n`);
      chmodSync(join(folder, name), 0o755);
    };
    hook(join(workspace, '.git/hooks'), 'commit-msg', `echo "commit-msg ran" >> "${join(workspace, '.git/ran.log')}"`);
    expect(await commit(true, 'With the hook')).toBe(`With the hook\n\n${CO_AUTHOR_TRAILER}`);
    expect(readFileSync(join(workspace, '.git/ran.log'), 'utf8')).toBe('commit-msg ran\n');

    hook(join(workspace, '.husky'), 'pre-commit', 'echo "refused by the project" >&2; exit 1');
    git('config', 'core.hooksPath', '.husky');
    const context: ToolContext = {
      workspace,
      policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [], includeCoAuthoredByAgent: true },
      signal: new AbortController().signal,
    };
    const refused = await executeTool.run({ command: 'echo y >> a.txt && git commit -qam "Refused"' }, context);
    expect(refused).toMatchObject({ isError: true, content: expect.stringContaining('refused by the project') });
    expect(git('log', '-1', '--format=%s').trim()).toBe('With the hook');
  });

  // The hook runs the built scanner (dist/agent/shield/shield-cli.js), which `npm test` builds first.
  it('with enableAgentShield, a commit adding a credential is stopped, --no-verify or not, naming the file and line but never the value', async () => {
    const token = ['ghp', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'].join('_');
    const context: ToolContext = {
      workspace,
      policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [], includeCoAuthoredByAgent: false, enableAgentShield: true },
      signal: new AbortController().signal,
    };
    write('settings.env', `NAME=demo\nGITHUB_TOKEN=${token}\n`);
    for (const flags of ['', ' --no-verify']) {
      const result = await executeTool.run({ command: `git add settings.env && git commit -q${flags} -m "Add settings"` }, context);
      expect(result).toMatchObject({ isError: true, content: expect.stringContaining('settings.env:2: GITHUB_TOKEN') });
      expect(result.content).not.toContain(token);
    }
    expect(() => git('log', '-1')).toThrow();
    write('settings.env', 'NAME=demo\nGITHUB_TOKEN=${GITHUB_TOKEN}\n');
    expect(await executeTool.run({ command: 'git add settings.env && git commit -q -m "Add settings"' }, context)).toMatchObject({ isError: false });
  });
});
