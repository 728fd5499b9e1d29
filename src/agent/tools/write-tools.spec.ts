import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { failure, ok, outside, read, root, run, workspace, write } from '../../../test/utils/tool-workspace';
import { createTool } from './create';
import { editTool } from './edit';

describe('Create', () => {
  it('creates a file with its content, and the folders it needs', async () => {
    expect(await run(createTool, { file_path: 'src/deep/new.ts', content: 'one\ntwo\n' })).toEqual(ok('Created src/deep/new.ts (2 lines)'));
    expect(read('src/deep/new.ts')).toBe('one\ntwo\n');
    expect(await run(createTool, { file_path: join(workspace, 'abs.txt'), content: 'x' })).toEqual(ok('Created abs.txt (1 line)'));
    expect(await run(createTool, { file_path: 'empty.txt', content: '' })).toEqual(ok('Created empty.txt (0 lines)'));
    expect(read('empty.txt')).toBe('');
  });

  it('refuses to overwrite a file, a folder or a symlink: use Edit', async () => {
    write('a.txt', 'old');
    symlinkSync(join(workspace, 'a.txt'), join(workspace, 'link.txt'));
    expect(await run(createTool, { file_path: 'a.txt', content: 'new' })).toEqual(failure('a.txt already exists; use Edit (or ApplyPatch) to change it'));
    expect(await run(createTool, { file_path: 'link.txt', content: 'new' })).toEqual(failure('a.txt already exists; use Edit (or ApplyPatch) to change it'));
    expect(read('a.txt')).toBe('old');
    mkdirSync(join(workspace, 'folder'));
    expect(await run(createTool, { file_path: 'folder', content: 'x' })).toEqual(failure('folder already exists; use Edit (or ApplyPatch) to change it'));
  });

  it('refuses a path under a file', async () => {
    write('a.txt', 'old');
    expect(await run(createTool, { file_path: 'a.txt/b.txt', content: 'x' })).toEqual(failure('Cannot create a.txt/b.txt: a part of its folder is a file'));
  });

  it('refuses paths outside the workspace, also through a symlinked folder or a dangling symlink', async () => {
    symlinkSync(outside, join(workspace, 'out'));
    symlinkSync(join(outside, 'planted.txt'), join(workspace, 'dangling.txt'));
    for (const file_path of ['../escape.txt', join(outside, 'abs.txt'), 'out/new.txt', 'out/deep/new.txt']) {
      expect(await run(createTool, { file_path, content: 'x' })).toEqual(failure(/outside the workspace/));
    }
    expect(await run(createTool, { file_path: 'dangling.txt', content: 'x' })).toEqual(failure(/leads nowhere/));
    expect(
      existsSync(join(root, 'escape.txt')) ||
        existsSync(join(outside, 'new.txt')) ||
        existsSync(join(outside, 'deep')) ||
        existsSync(join(outside, 'planted.txt')),
    ).toBe(false);
  });
});

describe('Edit', () => {
  it('replaces the one occurrence of old_str', async () => {
    write('a.ts', 'const a = 1;\nconst b = 2;\n');
    expect(await run(editTool, { file_path: 'a.ts', old_str: 'const b = 2;', new_str: 'const b = 3;\nconst c = 4;' })).toEqual(
      ok('Edited a.ts: replaced 1 occurrence of old_str'),
    );
    expect(read('a.ts')).toBe('const a = 1;\nconst b = 3;\nconst c = 4;\n');
  });

  it('takes new_str literally ($ patterns are not special) and may delete with an empty new_str', async () => {
    write('a.ts', 'price = X;\n');
    await run(editTool, { file_path: 'a.ts', old_str: 'X', new_str: "$& $1 $$ $'" });
    expect(read('a.ts')).toBe("price = $& $1 $$ $';\n");
    await run(editTool, { file_path: 'a.ts', old_str: ' = ', new_str: '' });
    expect(read('a.ts')).toBe("price$& $1 $$ $';\n");
  });

  it('refuses several occurrences unless replace_all, which replaces them all', async () => {
    write('a.ts', 'foo(); foo();\nfoo();\n');
    expect(await run(editTool, { file_path: 'a.ts', old_str: 'foo()', new_str: 'bar()' })).toEqual(
      failure('old_str occurs 3 times in a.ts; add surrounding lines to make it unique, or set replace_all to replace every occurrence'),
    );
    expect(read('a.ts')).toBe('foo(); foo();\nfoo();\n');
    expect(await run(editTool, { file_path: 'a.ts', old_str: 'foo()', new_str: 'bar()', replace_all: true })).toEqual(
      ok('Edited a.ts: replaced 3 occurrences of old_str'),
    );
    expect(read('a.ts')).toBe('bar(); bar();\nbar();\n');
    expect(await run(editTool, { file_path: 'a.ts', old_str: 'bar(); bar();', new_str: 'baz();', replace_all: true })).toEqual(
      ok('Edited a.ts: replaced 1 occurrence of old_str'),
    );
  });

  it('counts occurrences without overlap', async () => {
    write('a.txt', 'aaaa');
    expect(await run(editTool, { file_path: 'a.txt', old_str: 'aa', new_str: 'b' })).toEqual(failure(/occurs 2 times/));
    expect(await run(editTool, { file_path: 'a.txt', old_str: 'aa', new_str: 'b', replace_all: true })).toEqual(
      ok('Edited a.txt: replaced 2 occurrences of old_str'),
    );
    expect(read('a.txt')).toBe('bb');
  });

  it('refuses old_str that is not found, empty, or equal to new_str', async () => {
    write('a.ts', 'const a = 1;\n');
    expect(await run(editTool, { file_path: 'a.ts', old_str: 'const  a', new_str: 'x' })).toEqual(
      failure(/^old_str was not found in a\.ts; it must match the file exactly/),
    );
    expect(await run(editTool, { file_path: 'a.ts', old_str: '', new_str: 'x' })).toEqual(failure('Argument "old_str" must not be empty'));
    expect(await run(editTool, { file_path: 'a.ts', old_str: 'a', new_str: 'a' })).toEqual(
      failure('old_str and new_str are the same: there is nothing to change'),
    );
    expect(read('a.ts')).toBe('const a = 1;\n');
  });

  it('matches LF strings in a CRLF file and keeps its line ends', async () => {
    write('win.txt', 'one\r\ntwo\r\nthree\r\n');
    expect(await run(editTool, { file_path: 'win.txt', old_str: 'one\ntwo', new_str: 'uno\ndos\nmas' })).toEqual(
      ok('Edited win.txt: replaced 1 occurrence of old_str'),
    );
    expect(read('win.txt')).toBe('uno\r\ndos\r\nmas\r\nthree\r\n');
  });

  it('keeps the file mode', async () => {
    write('run.sh', '#!/bin/sh\necho a\n');
    const file = join(workspace, 'run.sh');
    chmodSync(file, 0o755);
    await run(editTool, { file_path: 'run.sh', old_str: 'echo a', new_str: 'echo b' });
    expect(statSync(file).mode & 0o777).toBe(0o755);
  });

  it('refuses missing files, folders, binary files and paths outside the workspace', async () => {
    write('bin.dat', Buffer.from([1, 0, 2]));
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    symlinkSync(join(outside, 'secret.txt'), join(workspace, 'link.txt'));
    mkdirSync(join(workspace, 'src'));
    expect(await run(editTool, { file_path: 'nope.txt', old_str: 'a', new_str: 'b' })).toEqual(
      failure('nope.txt does not exist; use Create to make a new file'),
    );
    expect(await run(editTool, { file_path: 'src', old_str: 'a', new_str: 'b' })).toEqual(failure('src is a folder, not a file'));
    expect(await run(editTool, { file_path: 'bin.dat', old_str: 'a', new_str: 'b' })).toEqual(
      failure('bin.dat is a binary file; Edit only changes text files'),
    );
    for (const file_path of ['../outside/secret.txt', join(outside, 'secret.txt'), 'link.txt']) {
      expect(await run(editTool, { file_path, old_str: 'secret', new_str: 'public' })).toEqual(failure(/outside the workspace/));
    }
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('secret');
  });
});
