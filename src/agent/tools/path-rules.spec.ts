import { existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { failure, read, workspace, write } from '../../../test/utils/tool-workspace';
import { applyPatchTool } from './apply-patch';
import { createTool } from './create';
import { editTool } from './edit';
import { globTool } from './glob';
import { grepTool } from './grep';
import { lsTool } from './ls';
import { PathRules } from './path-rules';
import { readTool } from './read';
import { AgentTool, ToolContext } from './tool';

type Filesystem = { allowWrite: string[]; allowRead: string[]; denyWrite: string[]; denyRead: string[] };

const under = (filesystem: Partial<Filesystem>) => (tool: AgentTool, input: Record<string, unknown>) => {
  const context: ToolContext = {
    workspace,
    policy: {
      commandAllowlist: [],
      commandDenylist: [],
      commandBlocklist: [],
      sandbox: {
        enabled: false,
        filesystem: { allowWrite: [], allowRead: [], denyWrite: [], denyRead: [], ...filesystem },
        network: { allowedDomains: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false },
      },
    },
    signal: new AbortController().signal,
  };
  return tool.run(input, context);
};
const readDenied = failure(/the organization's sandbox\.filesystem\.denyRead keeps it from the agent; it was not read$/);

describe("The file tools under the organization's sandbox.filesystem", () => {
  beforeEach(() => {
    write('.env', 'API_KEY=sk-live-123\n');
    write('config/.env', 'DB_PASSWORD=hunter2\n');
    write('secrets/key.pem', '-----BEGIN PRIVATE KEY-----\n');
    write('src/app.ts', 'export const app = 1; // API_KEY lives elsewhere\n');
  });

  it('Read refuses a denyRead file by every name: relative, absolute, through ./.., a symlink, a glob-matched one deeper down', async () => {
    const run = under({ denyRead: ['**/.env', 'secrets'] });
    symlinkSync(join(workspace, 'secrets/key.pem'), join(workspace, 'src/innocent.txt'));
    for (const file_path of ['.env', join(workspace, '.env'), 'src/../.env', 'config/.env', 'secrets/key.pem', './secrets//key.pem', 'src/innocent.txt']) {
      expect({ file_path, result: await run(readTool, { file_path }) }).toEqual({ file_path, result: readDenied });
    }
    expect((await run(readTool, { file_path: 'src/app.ts' })).isError).toBe(false);
  });

  it('Grep, Glob and LS leave denied files out and say how many; a denied folder cannot be searched or listed at all', async () => {
    const run = under({ denyRead: ['**/.env', 'secrets'] });
    const grep = await run(grepTool, { pattern: 'API_KEY|DB_PASSWORD|PRIVATE' });
    expect(grep.content).toContain('src/app.ts:1:');
    expect(grep.content).not.toMatch(/sk-live|hunter2|BEGIN/);
    expect(grep.content).toMatch(/\[3 entries left out: the organization's sandbox\.filesystem\.denyRead/);
    expect(await run(grepTool, { pattern: 'BEGIN', path: 'secrets' })).toEqual(readDenied);
    expect(await run(grepTool, { pattern: 'sk-live', path: '.env' })).toEqual(readDenied);

    const glob = await run(globTool, { pattern: '**/*' });
    expect(glob.content.split('\n').slice(0, -1)).toEqual(['src/app.ts']);
    expect(await run(globTool, { pattern: '*', path: 'secrets' })).toEqual(readDenied);

    const ls = await run(lsTool, {});
    expect(ls.content).toBe("config/\nsrc/\n[2 entries left out: the organization's sandbox.filesystem.denyRead keeps them from the agent]");
    expect(await run(lsTool, { path: 'secrets' })).toEqual(readDenied);
  });

  it('allowRead re-opens a denied region, but a more specific denyRead inside it stays denied', async () => {
    const run = under({ denyRead: [workspace, 'config/.env'], allowRead: ['config'] });
    expect(await run(readTool, { file_path: 'src/app.ts' })).toEqual(readDenied);
    expect(await run(readTool, { file_path: 'config/.env' })).toEqual(readDenied);
    write('config/app.json', '{}\n');
    expect((await run(readTool, { file_path: 'config/app.json' })).isError).toBe(false);
  });

  it('Create, Edit and ApplyPatch refuse denyWrite paths (and denyRead ones) and change nothing', async () => {
    const run = under({ denyWrite: ['src'], denyRead: ['.env'] });
    const writeDenied = failure(/the organization's sandbox\.filesystem\.deny(Write|Read) keeps it from the agent; it was not changed$/);
    expect(await run(createTool, { file_path: 'src/new.ts', content: 'x' })).toEqual(writeDenied);
    expect(await run(editTool, { file_path: 'src/app.ts', old_str: 'app = 1', new_str: 'app = 2' })).toEqual(writeDenied);
    expect(await run(editTool, { file_path: '.env', old_str: 'sk-live-123', new_str: 'x' })).toEqual(writeDenied);
    const patch = '*** Begin Patch\n*** Update File: README.md\n*** Move to: src/moved.md\n@@\n-hi\n+ho\n*** End Patch';
    write('README.md', 'hi\n');
    expect(await run(applyPatchTool, { patch })).toEqual(writeDenied);
    expect(read('src/app.ts')).toBe('export const app = 1; // API_KEY lives elsewhere\n');
    expect(read('README.md')).toBe('hi\n');
    expect(existsSync(join(workspace, 'src/new.ts'))).toBe(false);
    expect((await run(createTool, { file_path: 'docs/new.md', content: 'x' })).isError).toBe(false);
  });

  it('reads ~ as the home folder and a trailing /** as the folder itself', () => {
    const rules = new PathRules({ denyRead: ['~/.ssh', '/srv/data/**'], allowRead: [], denyWrite: [] }, '/ws', '/home/dev');
    expect(rules.readDenial('/home/dev/.ssh/id_ed25519')).toBe('sandbox.filesystem.denyRead');
    expect(rules.readDenial('/srv/data')).toBe('sandbox.filesystem.denyRead');
    expect(rules.readDenial('/home/dev/.sshx')).toBeNull();
    expect(rules.readDenial('/srv/database')).toBeNull();
    expect(new PathRules(undefined, '/ws').empty).toBe(true);
  });
});
