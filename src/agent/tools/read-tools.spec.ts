import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { context, failure, ok, outside, run, workspace, write } from '../../../test/utils/tool-workspace';
import { pdfOf } from '../../../test/utils/fixtures/pdf';
import { GLOB_MAX_FILES, globTool } from './glob';
import { GREP_MAX_MATCHES, grepTool } from './grep';
import { LS_MAX_ENTRIES, lsTool } from './ls';
import { READ_MAX_CHARACTERS, READ_MAX_IMAGE_BYTES, readTool } from './read';

const numbered = (from: number, lines: string[]) => lines.map((line, i) => `${String(from + i).padStart(6)}\t${line}`).join('\n');
beforeEach(() => writeFileSync(join(outside, 'secret.ts'), 'const secret = 1;\n'));

describe('Read', () => {
  const lines = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`);

  it('returns the lines numbered like cat -n, by relative or absolute path', async () => {
    write('src/a.ts', 'one\ntwo\r\n\tthree\n');
    expect(await run(readTool, { file_path: 'src/a.ts' })).toEqual(ok('     1\tone\n     2\ttwo\n     3\t\tthree'));
    expect(await run(readTool, { file_path: join(workspace, 'src/a.ts') })).toEqual(ok(numbered(1, ['one', 'two', '\tthree'])));
  });

  it('shows a last line without line end, and an empty file as empty', async () => {
    write('a.txt', 'one\ntwo');
    write('empty.txt', '');
    expect(await run(readTool, { file_path: 'a.txt' })).toEqual(ok(numbered(1, ['one', 'two'])));
    expect(await run(readTool, { file_path: 'empty.txt' })).toEqual(ok('(empty.txt is empty)'));
  });

  it('returns the first 2000 lines by default and says where the file goes on', async () => {
    write('long.txt', `${lines.join('\n')}\n`);
    const { content, isError } = await run(readTool, { file_path: 'long.txt' });
    expect(isError).toBe(false);
    expect(content).toBe(`${numbered(1, lines.slice(0, 2000))}\n[lines 1-2000 shown; the file goes on: use offset=2001 to read more]`);
  });

  it('reads from offset (1-based) at most limit lines; 0 reads from the start', async () => {
    write('long.txt', `${lines.join('\n')}\n`);
    expect(await run(readTool, { file_path: 'long.txt', offset: 10, limit: 3 })).toEqual(
      ok(`${numbered(10, ['line 10', 'line 11', 'line 12'])}\n[lines 10-12 shown; the file goes on: use offset=13 to read more]`),
    );
    expect(await run(readTool, { file_path: 'long.txt', offset: 2999 })).toEqual(ok(numbered(2999, ['line 2999', 'line 3000'])));
    expect(await run(readTool, { file_path: 'long.txt', offset: 2998, limit: 3 })).toEqual(ok(numbered(2998, ['line 2998', 'line 2999', 'line 3000'])));
    expect((await run(readTool, { file_path: 'long.txt', offset: 0, limit: 1 })).content).toMatch(/^ {5}1\tline 1\n/);
  });

  it('refuses an offset past the end', async () => {
    write('a.txt', 'one\ntwo\n');
    expect(await run(readTool, { file_path: 'a.txt', offset: 3 })).toEqual(failure('offset 3 is past the end of a.txt, which has 2 lines'));
  });

  it('cuts the output at 100,000 characters and says so', async () => {
    const wide = Array.from({ length: 1000 }, (_, i) => `${i + 1}:${'x'.repeat(200)}`);
    write('wide.txt', wide.join('\n'));
    const { content, isError } = await run(readTool, { file_path: 'wide.txt' });
    expect(isError).toBe(false);
    const [shown, note] = [content.slice(0, content.lastIndexOf('\n')), content.slice(content.lastIndexOf('\n') + 1)];
    expect(shown).toHaveLength(READ_MAX_CHARACTERS);
    expect(shown.startsWith(numbered(1, wide.slice(0, 400)))).toBe(true);
    const cut = shown.split('\n').length;
    expect(note).toBe(`[output truncated at ${READ_MAX_CHARACTERS} characters, in line ${cut}; use offset=${cut} to read on]`);
  });

  it('shows the start of one line longer than the cap', async () => {
    write('minified.js', `${'y'.repeat(300_000)}\nsecond\n`);
    const { content } = await run(readTool, { file_path: 'minified.js' });
    expect(content.startsWith(`     1\t${'y'.repeat(1000)}`)).toBe(true);
    expect(content).toMatch(/\n\[output truncated at 100000 characters, in line 1; use offset=1 to read on\]$/);
    expect(content.length).toBeLessThan(READ_MAX_CHARACTERS + 200);
    expect(await run(readTool, { file_path: 'minified.js', offset: 2 })).toEqual(ok('     2\tsecond'));
  });

  it('refuses folders, binary files, missing files and other kinds of files', async () => {
    write('src/a.ts', 'a');
    write('image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    write('data.bin', Buffer.from([0x00, 0x01, 0x02]));
    write('late-nul.txt', `${'a'.repeat(9000)}\0`);
    expect(await run(readTool, { file_path: 'src' })).toEqual(failure('src is a folder, not a file; use LS to list it'));
    expect(await run(readTool, { file_path: '.' })).toEqual(failure('. is a folder, not a file; use LS to list it'));
    // A name says nothing: bytes that are no image are a binary file, whatever the extension.
    expect(await run(readTool, { file_path: 'image.png' })).toEqual(
      failure('image.png is a binary file; Read only shows text files, images (PNG, JPEG, GIF, WebP) and PDFs'),
    );
    expect(await run(readTool, { file_path: 'data.bin' })).toEqual(
      failure('data.bin is a binary file; Read only shows text files, images (PNG, JPEG, GIF, WebP) and PDFs'),
    );
    expect((await run(readTool, { file_path: 'late-nul.txt' })).isError).toBe(false);
    expect(await run(readTool, { file_path: 'src/missing.ts' })).toEqual(failure('src/missing.ts does not exist'));
    expect(await run(readTool, { file_path: 'src/a.ts/x' })).toEqual(failure('src/a.ts/x does not exist'));
    expect(await run(readTool, { file_path: '' })).toEqual(failure('Argument "file_path" must not be empty'));
  });

  it('shows an image to the model (PNG, JPEG, GIF, WebP by their first bytes), describing it in the text, and refuses one over 5 MB', async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100, 1)]);
    write('shots/screen.dat', png);
    expect(await run(readTool, { file_path: 'shots/screen.dat' })).toEqual({
      isError: false,
      content: 'shots/screen.dat: an image (image/png, 0 KB), shown to you beside this result.',
      images: [{ mediaType: 'image/png', data: png.toString('base64') }],
    });
    write('photo.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]));
    expect((await run(readTool, { file_path: 'photo.jpg' })).images).toEqual([{ mediaType: 'image/jpeg', data: expect.any(String) }]);
    write('big.gif', Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(READ_MAX_IMAGE_BYTES)]));
    expect(await run(readTool, { file_path: 'big.gif' })).toEqual(failure('big.gif is an image of 5120 KB; images larger than 5 MB are not read'));
  });

  it('reads a PDF as its text, with its pages', async () => {
    write('docs/spec.pdf', pdfOf('The API answers 404 for another organization.'));
    expect(await run(readTool, { file_path: 'docs/spec.pdf' })).toEqual(
      ok('docs/spec.pdf: a PDF of 1 page, as text:\nThe API answers 404 for another organization.'),
    );
    write('broken.pdf', '%PDF-1.4\nnothing else');
    expect((await run(readTool, { file_path: 'broken.pdf' })).isError).toBe(true);
  });

  it('refuses paths outside the workspace, also through a symlink', async () => {
    symlinkSync(join(outside, 'secret.ts'), join(workspace, 'link.ts'));
    expect(await run(readTool, { file_path: '../outside/secret.ts' })).toEqual(failure(/outside the workspace/));
    expect(await run(readTool, { file_path: join(outside, 'secret.ts') })).toEqual(failure(/outside the workspace/));
    expect(await run(readTool, { file_path: 'link.ts' })).toEqual(failure(/outside the workspace/));
  });
});

describe('LS', () => {
  it('lists the entries sorted, folders with a trailing slash, the root by default', async () => {
    write('b.txt', '');
    write('a/x.txt', '');
    write('.env', '');
    write('C.md', '');
    mkdirSync(join(workspace, 'empty'));
    symlinkSync(join(workspace, 'a'), join(workspace, 'link-to-a'));
    expect(await run(lsTool, {})).toEqual(ok(['.env', 'C.md', 'a/', 'b.txt', 'empty/', 'link-to-a/'].join('\n')));
    expect(await run(lsTool, { path: 'a' })).toEqual(ok('x.txt'));
    expect(await run(lsTool, { path: join(workspace, 'a') })).toEqual(ok('x.txt'));
    expect(await run(lsTool, { path: 'empty' })).toEqual(ok('(empty is empty)'));
  });

  it('lists at most 1000 entries and says it cut the list', async () => {
    for (let i = 0; i < LS_MAX_ENTRIES + 2; i++) write(`many/f${String(i).padStart(4, '0')}`, '');
    const lines = (await run(lsTool, { path: 'many' })).content.split('\n');
    expect(lines).toHaveLength(LS_MAX_ENTRIES + 1);
    expect(lines[LS_MAX_ENTRIES - 1]).toBe('f0999');
    expect(lines[LS_MAX_ENTRIES]).toBe(`[1000 of ${LS_MAX_ENTRIES + 2} entries shown; use Glob to narrow down]`);
  });

  it('refuses files, missing folders and folders outside the workspace', async () => {
    write('b.txt', '');
    symlinkSync(outside, join(workspace, 'out'));
    expect(await run(lsTool, { path: 'b.txt' })).toEqual(failure('b.txt is not a folder; use Read to read a file'));
    expect(await run(lsTool, { path: 'nope' })).toEqual(failure('nope does not exist'));
    expect(await run(lsTool, { path: '..' })).toEqual(failure(/outside the workspace/));
    expect(await run(lsTool, { path: 'out' })).toEqual(failure(/outside the workspace/));
  });
});

describe('Glob', () => {
  beforeEach(() => {
    for (const file of ['src/a.ts', 'src/b.js', 'src/deep/c.ts', 'README.md', '.github/ci.yml', '.hidden.ts']) write(file, 'x');
    for (const file of ['.git/hooks/x.ts', 'node_modules/pkg/index.ts', 'src/node_modules/inner.ts']) write(file, 'x');
  });

  it('returns matching files sorted, relative to the workspace, without .git and node_modules', async () => {
    expect(await run(globTool, { pattern: '**/*.ts' })).toEqual(ok(['.hidden.ts', 'src/a.ts', 'src/deep/c.ts'].join('\n')));
    expect(await run(globTool, { pattern: '*' })).toEqual(ok(['.hidden.ts', 'README.md'].join('\n')));
    expect(await run(globTool, { pattern: '**/*.{yml,md}' })).toEqual(ok(['.github/ci.yml', 'README.md'].join('\n')));
  });

  it('searches under path, still naming files relative to the workspace; absolute patterns inside it work', async () => {
    expect(await run(globTool, { pattern: '*.ts', path: 'src' })).toEqual(ok('src/a.ts'));
    expect(await run(globTool, { pattern: '**/*.ts', path: 'src/deep' })).toEqual(ok('src/deep/c.ts'));
    expect(await run(globTool, { pattern: join(workspace, 'src/**/*.ts') })).toEqual(ok(['src/a.ts', 'src/deep/c.ts'].join('\n')));
    expect(await run(globTool, { pattern: '*.ts', path: 'node_modules/pkg' })).toEqual(ok('node_modules/pkg/index.ts'));
  });

  it('says when nothing matches', async () => {
    expect(await run(globTool, { pattern: '**/*.py' })).toEqual(ok('No files match "**/*.py"'));
    expect(await run(globTool, { pattern: '*.py', path: 'src' })).toEqual(ok('No files match "*.py" in src'));
  });

  it('returns at most 1000 files and says it cut the list', async () => {
    for (let i = 0; i < GLOB_MAX_FILES + 5; i++) write(`many/f${String(i).padStart(4, '0')}.txt`, '');
    const { content, isError } = await run(globTool, { pattern: 'many/*.txt' });
    expect(isError).toBe(false);
    const lines = content.split('\n');
    expect(lines).toHaveLength(GLOB_MAX_FILES + 1);
    expect(lines[0]).toBe('many/f0000.txt');
    expect(lines[GLOB_MAX_FILES - 1]).toBe('many/f0999.txt');
    expect(lines[GLOB_MAX_FILES]).toBe(`[1000 of ${GLOB_MAX_FILES + 5} files shown; use a narrower pattern or path]`);
  });

  it('does not leave the workspace: "..", absolute patterns outside, symlinked folders', async () => {
    symlinkSync(outside, join(workspace, 'out'));
    symlinkSync(join(outside, 'secret.ts'), join(workspace, 'secret-link.ts'));
    expect(await run(globTool, { pattern: '../outside/*.ts' })).toEqual(failure(/must not contain "\.\."/));
    expect(await run(globTool, { pattern: `${outside}/*.ts` })).toEqual(failure(/absolute and outside/));
    expect(await run(globTool, { pattern: '*.ts', path: '../outside' })).toEqual(failure(/outside the workspace/));
    expect(await run(globTool, { pattern: 'out/*.ts' })).toEqual(ok('No files match "out/*.ts"'));
    expect(await run(globTool, { pattern: 'secret-link.ts' })).toEqual(ok('No files match "secret-link.ts"'));
    expect((await run(globTool, { pattern: '**/*.ts' })).content).not.toMatch(/secret/);
  });

  it('refuses a path that is not a folder', async () => {
    expect(await run(globTool, { pattern: '*', path: 'README.md' })).toEqual(failure('README.md is not a folder'));
    expect(await run(globTool, { pattern: '*', path: 'nope' })).toEqual(failure('nope does not exist'));
  });
});

describe('Grep', () => {
  beforeEach(() => {
    write('src/a.ts', 'export const alpha = 1;\nconst Beta = 2;\r\nexport function gamma() {}\n');
    write('src/b.js', 'module.exports = { alpha: 3 };\n');
    write('README.md', '# Alpha\n');
  });

  it('returns matching lines as file:line:text, files sorted', async () => {
    expect(await run(grepTool, { pattern: 'alpha' })).toEqual(
      ok(['src/a.ts:1:export const alpha = 1;', 'src/b.js:1:module.exports = { alpha: 3 };'].join('\n')),
    );
    expect(await run(grepTool, { pattern: '^const \\w+ = \\d;$' })).toEqual(ok('src/a.ts:2:const Beta = 2;'));
  });

  it('matches case-insensitively with ignore_case', async () => {
    expect(await run(grepTool, { pattern: 'ALPHA', ignore_case: true })).toEqual(
      ok(['README.md:1:# Alpha', 'src/a.ts:1:export const alpha = 1;', 'src/b.js:1:module.exports = { alpha: 3 };'].join('\n')),
    );
    expect(await run(grepTool, { pattern: 'ALPHA' })).toEqual(ok('No matches for "ALPHA"'));
  });

  it('searches a folder or a file given as path, and only files matching glob', async () => {
    expect(await run(grepTool, { pattern: 'alpha', path: 'src/b.js' })).toEqual(ok('src/b.js:1:module.exports = { alpha: 3 };'));
    expect(await run(grepTool, { pattern: 'alpha', path: 'src', glob: '*.ts' })).toEqual(ok('src/a.ts:1:export const alpha = 1;'));
    expect(await run(grepTool, { pattern: 'alpha', glob: '*.js' })).toEqual(ok('src/b.js:1:module.exports = { alpha: 3 };'));
    expect(await run(grepTool, { pattern: 'alpha', glob: 'src/*.{ts,md}' })).toEqual(ok('src/a.ts:1:export const alpha = 1;'));
    expect(await run(grepTool, { pattern: 'alpha', path: 'src', glob: '*.py' })).toEqual(ok('No matches for "alpha" in src (files matching "*.py")'));
  });

  it('skips .git, node_modules, binary files and files over 1 MB', async () => {
    write('.git/config', 'alpha\n');
    write('node_modules/pkg/index.js', 'alpha\n');
    write('lib/node_modules/pkg/index.js', 'alpha\n');
    write('bin/tool', Buffer.concat([Buffer.from('alpha\n'), Buffer.from([0, 1, 2])]));
    write('big.txt', `alpha\n${'z'.repeat(1024 * 1024)}`);
    write('.config/settings.json', '{"alpha": true}\n');
    expect(await run(grepTool, { pattern: 'alpha' })).toEqual(
      ok(['.config/settings.json:1:{"alpha": true}', 'src/a.ts:1:export const alpha = 1;', 'src/b.js:1:module.exports = { alpha: 3 };'].join('\n')),
    );
    expect(await run(grepTool, { pattern: 'alpha', path: 'node_modules' })).toEqual(ok('node_modules/pkg/index.js:1:alpha'));
    expect(await run(grepTool, { pattern: 'alpha', path: 'bin/tool' })).toEqual(failure('bin/tool is a binary file or larger than 1 MB; Grep skips those'));
  });

  it('returns at most 500 matches and says it stopped; cuts long lines', async () => {
    write('many.txt', Array.from({ length: GREP_MAX_MATCHES + 10 }, (_, i) => `hit ${i + 1}`).join('\n'));
    const { content } = await run(grepTool, { pattern: '^hit', path: 'many.txt' });
    const lines = content.split('\n');
    expect(lines).toHaveLength(GREP_MAX_MATCHES + 1);
    expect(lines[GREP_MAX_MATCHES - 1]).toBe(`many.txt:${GREP_MAX_MATCHES}:hit ${GREP_MAX_MATCHES}`);
    expect(lines[GREP_MAX_MATCHES]).toBe(`[stopped after ${GREP_MAX_MATCHES} matches; narrow the pattern, path or glob]`);

    write('wide.txt', `needle${'w'.repeat(2000)}`);
    expect(await run(grepTool, { pattern: 'needle', path: 'wide.txt' })).toEqual(ok(`wide.txt:1:needle${'w'.repeat(494)}… [line cut at 500 characters]`));
  });

  it('refuses an invalid regular expression, a missing path and paths outside', async () => {
    symlinkSync(outside, join(workspace, 'out'));
    symlinkSync(join(outside, 'secret.ts'), join(workspace, 'src/secret-link.ts'));
    expect(await run(grepTool, { pattern: '(unclosed' })).toEqual(failure(/^Invalid regular expression "\(unclosed": /));
    expect(await run(grepTool, { pattern: 'a', path: 'nope' })).toEqual(failure('nope does not exist'));
    expect(await run(grepTool, { pattern: 'secret', path: '..' })).toEqual(failure(/outside the workspace/));
    expect(await run(grepTool, { pattern: 'secret', path: 'out' })).toEqual(failure(/outside the workspace/));
    expect(await run(grepTool, { pattern: 'secret', glob: '../outside/*' })).toEqual(failure('The glob "../outside/*" must not contain ".."'));
    expect(await run(grepTool, { pattern: 'secret' })).toEqual(ok('No matches for "secret"'));
    expect(await run(grepTool, { pattern: 'secret', glob: 'out/*.ts' })).toEqual(ok('No matches for "secret" (files matching "out/*.ts")'));
  });

  it("Grep runs a catastrophic pattern off the agent's thread: the agent stays responsive and an abort ends the search", async () => {
    write('evil.txt', `${'a'.repeat(40)}!\n`);
    const controller = new AbortController();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    try {
      expect(await grepTool.run({ pattern: '^(a+)+$' }, { ...context(), signal: controller.signal })).toEqual(failure('The search was aborted'));
    } finally {
      clearInterval(ticker);
    }
    expect(Date.now() - started).toBeLessThan(5_000); // (a+)+ on 40 a's and a ! would run for hours on the thread itself
    expect(ticks).toBeGreaterThanOrEqual(5);
  });

  it('Grep and Glob stop when the call is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await grepTool.run({ pattern: 'alpha' }, { ...context(), signal: controller.signal })).toEqual(failure('The search was aborted'));
    expect(await grepTool.run({ pattern: 'alpha', path: 'src/a.ts' }, { ...context(), signal: controller.signal })).toEqual(failure('The search was aborted'));
    expect(await globTool.run({ pattern: '**' }, { ...context(), signal: controller.signal })).toEqual(failure('The search was aborted'));
  });
});
