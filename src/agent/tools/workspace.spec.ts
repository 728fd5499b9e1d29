import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolNamed, WORKSPACE_TOOLS } from './index';
import { ToolContext } from './tool';
import { isInside, resolveInWorkspace } from './workspace';

let root: string;
let workspace: string;
let outside: string;
const context = (): ToolContext => ({
  workspace,
  policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [] },
  signal: new AbortController().signal,
});

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-tools-')));
  workspace = join(root, 'ws');
  outside = join(root, 'outside');
  mkdirSync(join(workspace, 'src'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(workspace, 'src', 'a.ts'), 'a\n');
  writeFileSync(join(outside, 'secret.txt'), 'secret\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('isInside', () => {
  it('is true for the root and what lies under it, false for siblings sharing a prefix and parents', () => {
    expect(isInside('/w', '/w')).toBe(true);
    expect(isInside('/w', '/w/a/b')).toBe(true);
    expect(isInside('/w', '/w/..a')).toBe(true);
    expect(isInside('/w', '/wx')).toBe(false);
    expect(isInside('/w', '/')).toBe(false);
    expect(isInside('/w/a', '/w')).toBe(false);
  });
});

describe('resolveInWorkspace', () => {
  it('resolves relative and absolute paths inside the workspace, existing or not', async () => {
    await expect(resolveInWorkspace(context(), 'src/a.ts')).resolves.toEqual({ root: workspace, absolute: join(workspace, 'src/a.ts'), relative: 'src/a.ts' });
    await expect(resolveInWorkspace(context(), join(workspace, 'src/new/b.ts'))).resolves.toMatchObject({ relative: 'src/new/b.ts' });
    await expect(resolveInWorkspace(context(), 'src/../src/./a.ts')).resolves.toMatchObject({ relative: 'src/a.ts' });
    await expect(resolveInWorkspace(context(), '.')).resolves.toMatchObject({ absolute: workspace, relative: '.' });
    await expect(resolveInWorkspace(context(), '')).resolves.toMatchObject({ relative: '.' });
  });

  it('refuses paths that lead outside with "..", absolutely, or through a symlink', async () => {
    symlinkSync(outside, join(workspace, 'out'));
    symlinkSync(join(outside, 'secret.txt'), join(workspace, 'secret-link.txt'));
    for (const path of [
      '../outside/secret.txt',
      '..',
      'src/../../x',
      join(outside, 'secret.txt'),
      '/etc/passwd',
      'out/secret.txt',
      'out/new.txt',
      'out',
      'secret-link.txt',
    ]) {
      await expect(resolveInWorkspace(context(), path)).rejects.toThrow(/is outside the workspace/);
    }
  });

  it('follows symlinks that stay inside, and a workspace named through a symlink', async () => {
    symlinkSync(join(workspace, 'src'), join(workspace, 'source'));
    await expect(resolveInWorkspace(context(), 'source/a.ts')).resolves.toMatchObject({ relative: 'src/a.ts' });
    symlinkSync(workspace, join(root, 'ws-link'));
    const linked = { ...context(), workspace: join(root, 'ws-link') };
    await expect(resolveInWorkspace(linked, join(root, 'ws-link', 'src/a.ts'))).resolves.toMatchObject({
      absolute: join(workspace, 'src/a.ts'),
      relative: 'src/a.ts',
    });
    await expect(resolveInWorkspace(linked, join(workspace, 'src/a.ts'))).resolves.toMatchObject({ relative: 'src/a.ts' });
  });

  it('refuses dangling symlinks and symlink loops, whose target is unknown', async () => {
    symlinkSync(join(outside, 'missing.txt'), join(workspace, 'dangling'));
    symlinkSync(join(workspace, 'loop'), join(workspace, 'loop'));
    await expect(resolveInWorkspace(context(), 'dangling')).rejects.toThrow(/leads nowhere/);
    await expect(resolveInWorkspace(context(), 'loop/x')).rejects.toThrow(/symbolic links/);
  });

  it('refuses NUL characters and a missing workspace', async () => {
    await expect(resolveInWorkspace(context(), 'a\0b')).rejects.toThrow(/NUL/);
    await expect(resolveInWorkspace({ ...context(), workspace: join(root, 'nope') }, 'a')).rejects.toThrow(/not available/);
  });
});

describe('WORKSPACE_TOOLS', () => {
  it('lists the tools in order, each with a description and an object schema naming its required fields', () => {
    expect(WORKSPACE_TOOLS.map((tool) => tool.name)).toEqual(['Read', 'LS', 'Glob', 'Grep', 'Create', 'Edit', 'ApplyPatch', 'Execute']);
    for (const tool of WORKSPACE_TOOLS) {
      expect(tool.description.length).toBeGreaterThan(50);
      expect(tool.parameters).toMatchObject({ type: 'object', properties: expect.any(Object) });
      for (const field of (tool.parameters.required as string[] | undefined) ?? []) expect(Object.keys(tool.parameters.properties as object)).toContain(field);
    }
  });

  it('finds a tool by its exact name', () => {
    expect(toolNamed('Read')?.name).toBe('Read');
    expect(toolNamed('ApplyPatch')).toBe(WORKSPACE_TOOLS[6]);
    expect(toolNamed('read')).toBeUndefined();
    expect(toolNamed('Bash')).toBeUndefined();
  });

  it('never throws: bad input, missing or wrong-typed fields are errors the model reads', async () => {
    const bad: Array<[string, unknown]> = [
      ['Read', {}],
      ['Read', { file_path: 3 }],
      ['Read', { file_path: 'src/a.ts', offset: 'x' }],
      ['Read', { file_path: 'src/a.ts', limit: 0 }],
      ['Read', { file_path: 'src/a.ts', offset: 1.5 }],
      ['LS', { path: ['src'] }],
      ['Glob', {}],
      ['Glob', { pattern: '' }],
      ['Grep', { pattern: 'a', ignore_case: 'yes' }],
      ['Create', { file_path: 'x.txt' }],
      ['Create', { file_path: 'x.txt', content: { text: 'a' } }],
      ['Edit', { file_path: 'src/a.ts', old_str: 'a' }],
      ['Edit', { file_path: 'src/a.ts', old_str: 'a', new_str: 'b', replace_all: 1 }],
      ['ApplyPatch', {}],
      ['ApplyPatch', { patch: 7 }],
      ['Execute', {}],
      ['Execute', { command: 'true', timeout: '5' }],
      ['Execute', { command: 'true', timeout: 0 }],
    ];
    for (const [name, input] of bad) {
      const result = await toolNamed(name)!.run(input as Record<string, unknown>, context());
      expect({ name, input, isError: result.isError }).toEqual({ name, input, isError: true });
      expect(result.content).toMatch(/argument|must/i);
    }
    for (const tool of WORKSPACE_TOOLS) {
      for (const input of [null, 'text', [1]]) {
        await expect(tool.run(input as unknown as Record<string, unknown>, context())).resolves.toEqual({
          content: `${tool.name} takes an object of named arguments`,
          isError: true,
        });
      }
    }
  });

  it('takes null for an optional field as left out', async () => {
    const result = await toolNamed('Read')!.run({ file_path: 'src/a.ts', offset: null, limit: null }, context());
    expect(result).toEqual({ content: '     1\ta', isError: false });
  });

  it('refuses a path outside the workspace in every tool that takes one', async () => {
    const inputs: Array<[string, Record<string, unknown>]> = [
      ['Read', { file_path: '../outside/secret.txt' }],
      ['LS', { path: outside }],
      ['Glob', { pattern: '*', path: '..' }],
      ['Grep', { pattern: 'secret', path: '../outside' }],
      ['Create', { file_path: '../outside/new.txt', content: 'x' }],
      ['Edit', { file_path: join(outside, 'secret.txt'), old_str: 'secret', new_str: 'public' }],
      ['ApplyPatch', { patch: '*** Begin Patch\n*** Add File: ../outside/new.txt\n+x\n*** End Patch' }],
    ];
    for (const [name, input] of inputs) {
      const result = await toolNamed(name)!.run(input, context());
      expect({ name, ...result }).toEqual({ name, isError: true, content: expect.stringMatching(/outside the workspace/) });
    }
  });
});
