import { chmodSync, existsSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { context, failure, ok, outside, read, root, workspace, write } from '../../../test/utils/tool-workspace';
import { applyHunks, applyPatchTool, parsePatch } from './apply-patch';

const apply = (...lines: string[]) => applyPatchTool.run({ patch: ['*** Begin Patch', ...lines, '*** End Patch'].join('\n') }, context());

const PY = ['import os', '', 'def one():', '    return 1', '', 'def two():', '    return 2', '', 'def three():', '    return 3', ''].join('\n');

describe('ApplyPatch', () => {
  it('adds a file (and its folders)', async () => {
    expect(await apply('*** Add File: src/new/hello.txt', '+hello', '+', '+world')).toEqual(ok('Applied the patch:\nadded src/new/hello.txt'));
    expect(read('src/new/hello.txt')).toBe('hello\n\nworld\n');
  });

  it('deletes a file', async () => {
    write('old.txt', 'bye\n');
    expect(await apply('*** Delete File: old.txt')).toEqual(ok('Applied the patch:\ndeleted old.txt'));
    expect(existsSync(join(workspace, 'old.txt'))).toBe(false);
  });

  it('updates a file with several hunks, in order', async () => {
    write('m.py', PY);
    const result = await apply(
      '*** Update File: m.py',
      '@@',
      ' def one():',
      '-    return 1',
      '+    return 10',
      '@@',
      ' def three():',
      '-    return 3',
      '+    return 30',
      '+',
      '+def four():',
      '+    return 4',
    );
    expect(result).toEqual(ok('Applied the patch:\nupdated m.py'));
    expect(read('m.py')).toBe(PY.replace('return 1\n', 'return 10\n').replace('return 3\n', 'return 30\n\ndef four():\n    return 4\n'));
  });

  it('finds a hunk after its @@ anchor line', async () => {
    write('m.py', 'def a():\n    x = 1\n\ndef b():\n    x = 1\n');
    expect(await apply('*** Update File: m.py', '@@ def b():', '-    x = 1', '+    x = 2')).toEqual(ok('Applied the patch:\nupdated m.py'));
    expect(read('m.py')).toBe('def a():\n    x = 1\n\ndef b():\n    x = 2\n');
  });

  it('reads unified-diff @@ headers, lets the first hunk leave out @@, and anchors *** End of File at the end', async () => {
    write('a.txt', 'x\ny\nx\n');
    expect(await apply('*** Update File: a.txt', '@@ -1,3 +1,3 @@', ' y', '-x', '+z', '*** End of File')).toEqual(ok('Applied the patch:\nupdated a.txt'));
    expect(read('a.txt')).toBe('x\ny\nz\n');
    expect(await apply('*** Update File: a.txt', '-x', '+w')).toEqual(ok('Applied the patch:\nupdated a.txt'));
    expect(read('a.txt')).toBe('w\ny\nz\n');
  });

  it('inserts a hunk of only added lines after its anchor, or at the end of the file', async () => {
    write('a.txt', 'first\nsecond\n');
    await apply('*** Update File: a.txt', '@@ first', '+after first', '@@', '+at the end');
    expect(read('a.txt')).toBe('first\nafter first\nsecond\nat the end\n');
  });

  it('tolerates trailing whitespace differences and a blank line standing for the end of a hunk', async () => {
    write('a.txt', 'keep  \nold\n');
    expect(await apply('*** Update File: a.txt', '@@', ' keep', '-old', '+new', '')).toEqual(ok('Applied the patch:\nupdated a.txt'));
    expect(read('a.txt')).toBe('keep  \nnew\n');
  });

  it('moves a file, with or without changes, keeping its mode', async () => {
    write('src/a.sh', 'echo a\n');
    chmodSync(join(workspace, 'src/a.sh'), 0o755);
    expect(await apply('*** Update File: src/a.sh', '*** Move to: lib/b.sh', '@@', '-echo a', '+echo b')).toEqual(
      ok('Applied the patch:\nupdated src/a.sh, moved to lib/b.sh'),
    );
    expect(existsSync(join(workspace, 'src/a.sh'))).toBe(false);
    expect(read('lib/b.sh')).toBe('echo b\n');
    expect(statSync(join(workspace, 'lib/b.sh')).mode & 0o777).toBe(0o755);
    expect(await apply('*** Update File: lib/b.sh', '*** Move to: c.sh')).toEqual(ok('Applied the patch:\nupdated lib/b.sh, moved to c.sh'));
    expect(read('c.sh')).toBe('echo b\n');
  });

  it('adds, updates, moves and deletes in one patch and reports each file', async () => {
    write('keep.txt', 'a\nb\n');
    write('gone.txt', 'x\n');
    write('old/name.txt', 'n\n');
    const result = await apply(
      '*** Add File: fresh.txt',
      '+fresh',
      '*** Update File: keep.txt',
      '@@',
      ' a',
      '-b',
      '+c',
      '*** Delete File: gone.txt',
      '*** Update File: old/name.txt',
      '*** Move to: new/name.txt',
      '@@',
      '-n',
      '+m',
    );
    expect(result).toEqual(ok('Applied the patch:\nadded fresh.txt\nupdated keep.txt\ndeleted gone.txt\nupdated old/name.txt, moved to new/name.txt'));
    expect([read('fresh.txt'), read('keep.txt'), existsSync(join(workspace, 'gone.txt')), read('new/name.txt')]).toEqual(['fresh\n', 'a\nc\n', false, 'm\n']);
  });

  it('keeps CRLF line ends and a missing final line end', async () => {
    write('win.txt', 'one\r\ntwo\r\n');
    write('open.txt', 'one\ntwo');
    await apply('*** Update File: win.txt', '@@', '-two', '+2', '*** Update File: open.txt', '@@', ' one', '-two', '+2');
    expect(read('win.txt')).toBe('one\r\n2\r\n');
    expect(read('open.txt')).toBe('one\n2');
  });

  it('accepts a patch wrapped in a heredoc and CRLF line ends', async () => {
    const patch = ["apply_patch <<'EOF'", '*** Begin Patch', '*** Add File: a.txt', '+a', '*** End Patch', 'EOF', ''].join('\r\n');
    expect(await applyPatchTool.run({ patch }, context())).toEqual(ok('Applied the patch:\nadded a.txt'));
  });

  describe('is all or nothing', () => {
    beforeEach(() => {
      write('a.txt', 'a\n');
      write('b.txt', 'b\n');
    });
    const unchanged = () => {
      expect([read('a.txt'), read('b.txt'), existsSync(join(workspace, 'new.txt'))]).toEqual(['a\n', 'b\n', false]);
    };

    it('a hunk that does not apply changes no file, and every problem is listed', async () => {
      const result = await apply(
        '*** Add File: new.txt',
        '+n',
        '*** Update File: a.txt',
        '@@',
        '-a',
        '+A',
        '*** Update File: b.txt',
        '@@',
        '-nope',
        '+B',
        '*** Delete File: missing.txt',
      );
      expect(result).toEqual(
        failure(
          [
            'The patch was not applied (no file was changed):',
            '- b.txt: the hunk at patch line 9 did not apply: its context and removed lines were not found, starting with\n  "nope"',
            '- missing.txt: missing.txt does not exist',
          ].join('\n'),
        ),
      );
      unchanged();
    });

    it('refuses adding a file that exists, updating or deleting one that does not, moving onto a file', async () => {
      expect(await apply('*** Add File: a.txt', '+x')).toEqual(failure(/cannot add a\.txt, it already exists; use "\*\*\* Update File:"/));
      expect(await apply('*** Update File: nope.txt', '@@', '-a', '+b')).toEqual(failure(/nope\.txt does not exist/));
      expect(await apply('*** Update File: a.txt', '*** Move to: b.txt', '@@', '-a', '+A')).toEqual(failure(/cannot move it to b\.txt, which already exists/));
      mkdirSync(join(workspace, 'folder'));
      expect(await apply('*** Delete File: folder')).toEqual(failure(/folder is not a file/));
      unchanged();
    });

    it('refuses an anchor that is not found, or a hunk that only matches before the previous one', async () => {
      expect(await apply('*** Update File: a.txt', '@@ def missing():', '-a', '+A')).toEqual(failure(/its "@@" line "def missing\(\):" was not found/));
      write('c.txt', 'x\ny\n');
      expect(await apply('*** Update File: c.txt', '@@', '-y', '+Y', '@@', '-x', '+X')).toEqual(failure(/not found after the previous hunk/));
      expect(read('c.txt')).toBe('x\ny\n');
    });

    it('refuses a patch that changes one file twice, or that leaves the workspace', async () => {
      symlinkSync(outside, join(workspace, 'out'));
      expect(await apply('*** Update File: a.txt', '@@', '-a', '+A', '*** Delete File: a.txt')).toEqual(failure(/changes a\.txt more than once/));
      expect(await apply('*** Add File: new.txt', '+n', '*** Add File: ../escape.txt', '+x')).toEqual(failure(/escape\.txt is outside the workspace/));
      expect(await apply('*** Update File: a.txt', `*** Move to: ${join(outside, 'a.txt')}`, '@@', '-a', '+A')).toEqual(failure(/outside the workspace/));
      expect(await apply('*** Add File: out/planted.txt', '+x')).toEqual(failure(/outside the workspace/));
      unchanged();
      expect(existsSync(join(root, 'escape.txt')) || existsSync(join(outside, 'a.txt')) || existsSync(join(outside, 'planted.txt'))).toBe(false);
    });

    it('undoes the writes done when a later write fails', async () => {
      // Both paths are free when the patch is checked, but once `dir` is a file, `dir/inner.txt` cannot be written.
      const result = await apply(
        '*** Add File: new.txt',
        '+n',
        '*** Update File: a.txt',
        '@@',
        '-a',
        '+A',
        '*** Delete File: b.txt',
        '*** Add File: dir',
        '+d',
        '*** Add File: dir/inner.txt',
        '+i',
      );
      expect(result).toEqual(failure(/^Writing the patch failed \((EEXIST|ENOTDIR): .*\); the files written before were restored$/));
      unchanged();
      expect(existsSync(join(workspace, 'dir'))).toBe(false);
    });

    it('refuses binary files', async () => {
      write('bin.dat', Buffer.from([0, 1, 2, 10]));
      expect(await apply('*** Update File: bin.dat', '@@', '-x', '+y')).toEqual(failure(/bin\.dat is a binary file/));
    });
  });

  describe('refuses patches it cannot read', () => {
    it.each([
      ['no Begin line', '*** Add File: a\n+a\n*** End Patch', 'The patch must start with "*** Begin Patch"'],
      ['no End line', '*** Begin Patch\n*** Add File: a\n+a', 'The patch must end with "*** End Patch"'],
      ['no operation', '*** Begin Patch\n*** End Patch', 'The patch changes no file'],
      [
        'an added line without +',
        '*** Begin Patch\n*** Add File: a\nplain\n*** End Patch',
        'Patch line 3: every line of an added file starts with "+": "plain"',
      ],
      [
        'a hunk line without a prefix',
        '*** Begin Patch\n*** Update File: a\n@@\n-a\nplain\n*** End Patch',
        'Patch line 5: a hunk line starts with " " (context), "-" (removed) or "+" (added): "plain"',
      ],
      ['an unknown header', '*** Begin Patch\n*** Rename File: a\n*** End Patch', /^Patch line 2: expected "\*\*\* Add File:"/],
      ['an update without hunks', '*** Begin Patch\n*** Update File: a\n*** End Patch', 'Patch: "*** Update File: a" has no hunks'],
      ['an empty hunk', '*** Begin Patch\n*** Update File: a\n@@\n@@\n-a\n*** End Patch', 'Patch line 3: the hunk has no lines'],
      ['lines under a deleted file', '*** Begin Patch\n*** Delete File: a\n-a\n*** End Patch', 'Patch line 3: a deleted file takes no lines: "-a"'],
      ['a header without a path', '*** Begin Patch\n*** Add File: \n*** End Patch', 'Patch line 2: "*** Add File:" names no file'],
    ])('%s', async (_, patch, message) => {
      expect(await applyPatchTool.run({ patch }, context())).toEqual(failure(message));
    });
  });
});

describe('parsePatch and applyHunks', () => {
  it('parse the operations of a patch', () => {
    expect(parsePatch('*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ x\n c\n-d\n+e\n*** End of File\n*** Delete File: f\n*** End Patch')).toEqual([
      {
        kind: 'update',
        path: 'a',
        moveTo: 'b',
        hunks: [
          {
            anchor: 'x',
            lines: [
              [' ', 'c'],
              ['-', 'd'],
              ['+', 'e'],
            ],
            endOfFile: true,
            line: 4,
          },
        ],
      },
      { kind: 'delete', path: 'f' },
    ]);
  });

  it('apply to an empty file', () => {
    expect(
      applyHunks(
        '',
        [
          {
            lines: [
              ['+', 'a'],
              ['+', 'b'],
            ],
            endOfFile: false,
            line: 1,
          },
        ],
        'f',
      ),
    ).toBe('a\nb\n');
  });

  it('prefer an exact match over one ignoring whitespace', () => {
    expect(
      applyHunks(
        ' a\na\n',
        [
          {
            lines: [
              ['-', 'a'],
              ['+', 'b'],
            ],
            endOfFile: false,
            line: 1,
          },
        ],
        'f',
      ),
    ).toBe(' a\nb\n');
    expect(
      applyHunks(
        ' a\nc\n',
        [
          {
            lines: [
              ['-', 'a'],
              ['+', 'b'],
            ],
            endOfFile: false,
            line: 1,
          },
        ],
        'f',
      ),
    ).toBe('b\nc\n');
  });
});
