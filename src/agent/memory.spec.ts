import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { capBytes, loadMemory, MEMORY_MAX_BYTES, NESTED_MEMORY_MAX_BYTES, NestedInstructions, NO_MEMORY, withMemory } from './memory';

describe('Memory across turns', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'ap-memory-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("puts the agent's rules first, then the user's instructions, then the project's AGENTS.md, and says which wins", async () => {
    writeFileSync(join(dir, 'AGENTS.md'), '# Project\nRun `npm test` before you finish.\n');
    const settings = join(dir, 'settings.json');
    writeFileSync(settings, JSON.stringify({ hooks: {}, instructions: 'Answer in French.' }));
    const prompt = withMemory('You are a coding agent.', await loadMemory(dir, settings));
    const order = ['You are a coding agent.', "the project's AGENTS.md wins", 'Answer in French.', 'Run `npm test` before you finish.'].map((text) =>
      prompt.indexOf(text),
    );
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(prompt).toMatch(/organization's policy, which always win/);
    expect(prompt).not.toMatch(/truncated/);
  });

  it('leaves the prompt as it is without AGENTS.md or instructions (missing, empty, not JSON, not a string)', async () => {
    expect(withMemory('rules', await loadMemory(dir, join(dir, 'missing.json')))).toBe('rules');
    writeFileSync(join(dir, 'AGENTS.md'), '  \n');
    for (const text of ['{', '[]', '{"instructions": 42}', '{"instructions": "  "}', '{"hooks": {}}']) {
      writeFileSync(join(dir, 'settings.json'), text);
      expect(await loadMemory(dir, join(dir, 'settings.json'))).toEqual(NO_MEMORY);
    }
    expect(withMemory('rules', NO_MEMORY)).toBe('rules');
  });

  it('reads only the first 32 KiB of each, and says so', async () => {
    writeFileSync(join(dir, 'AGENTS.md'), 'é'.repeat(MEMORY_MAX_BYTES));
    writeFileSync(join(dir, 'settings.json'), JSON.stringify({ instructions: 'x'.repeat(MEMORY_MAX_BYTES + 10) }));
    const memory = await loadMemory(dir, join(dir, 'settings.json'));
    expect(Buffer.byteLength(memory.project!.text)).toBe(MEMORY_MAX_BYTES);
    expect(memory.project!.text).toBe('é'.repeat(MEMORY_MAX_BYTES / 2));
    expect(memory.user!.text).toHaveLength(MEMORY_MAX_BYTES);
    expect([memory.project!.truncated, memory.user!.truncated]).toEqual([true, true]);
    const prompt = withMemory('rules', memory);
    expect(prompt.match(/\[truncated: only the first 32 KiB of [^\]]+\]/g)).toHaveLength(2);
  });

  it('never cuts a character in two', () => {
    expect(capBytes('aé', 2)).toBe('a');
    expect(capBytes('a😀', 4)).toBe('a');
    expect(capBytes('a😀', 5)).toBe('a😀');
    expect(capBytes('abc', 10)).toBe('abc');
  });
});

describe('NestedInstructions', () => {
  let root: string;
  let workspace: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'nested-memory-'));
    workspace = join(root, 'ws');
    mkdirSync(join(workspace, 'src', 'api'), { recursive: true });
    writeFileSync(join(workspace, 'AGENTS.md'), 'Root rules.\n');
    writeFileSync(join(workspace, 'src', 'AGENTS.md'), 'Source rules.\n');
    writeFileSync(join(workspace, 'src', 'api', 'AGENTS.md'), 'API rules.\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("gives the folders' AGENTS.md below the root, the nearest last, each once a turn", async () => {
    const nested = new NestedInstructions(workspace);
    const first = await nested.for('src/api/handler.ts');
    expect(first).toContain(
      '<nested_instructions path="src/AGENTS.md">\nSource rules.\n</nested_instructions>\n<nested_instructions path="src/api/AGENTS.md">',
    );
    expect(first).not.toContain('Root rules.');
    expect(await nested.for(join(workspace, 'src', 'api', 'other.ts'))).toBeNull();
    expect(await nested.for('../elsewhere/x.ts')).toBeNull();
  });

  it('never reads an AGENTS.md that links outside the workspace (a key, say)', async () => {
    writeFileSync(join(root, 'id_rsa'), 'PRIVATE KEY');
    mkdirSync(join(workspace, 'lib'));
    symlinkSync(join(root, 'id_rsa'), join(workspace, 'lib', 'AGENTS.md'));
    expect(await new NestedInstructions(workspace).for('lib/x.ts')).toBeNull();
    rmSync(join(workspace, 'AGENTS.md'));
    symlinkSync(join(root, 'id_rsa'), join(workspace, 'AGENTS.md'));
    expect((await loadMemory(workspace, undefined)).project).toBeNull();
  });

  it('stops at the budget of a turn', async () => {
    writeFileSync(join(workspace, 'src', 'AGENTS.md'), 'x'.repeat(NESTED_MEMORY_MAX_BYTES + 10));
    const nested = new NestedInstructions(workspace);
    expect(await nested.for('src/api/a.ts')).toMatch(/x{100}\n\[truncated: the turn's 32 KiB of nested instructions are used up\]/);
    expect(await nested.for('src/api/a.ts')).toBeNull();
  });
});
