import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { autonomyRefusal } from './autonomy';

const execute = (level: string, command: string) => autonomyRefusal(level, 'Execute', { command });

describe("the session's autonomyLevel", () => {
  it('high, or no level, refuses nothing', () => {
    for (const level of ['high', undefined, null, 'weird']) {
      expect(execute(level as string, 'git push --force origin main && rm -rf /')).toBeNull();
      expect(autonomyRefusal(level, 'Create', { file_path: 'a', content: '' })).toBeNull();
    }
  });

  it('off allows only the tools that read', () => {
    for (const tool of ['Read', 'LS', 'Glob', 'Grep', 'Task']) expect(autonomyRefusal('off', tool, {})).toBeNull();
    for (const tool of ['Create', 'Edit', 'ApplyPatch'])
      expect(autonomyRefusal('off', tool, {})).toMatch(/^Refused by the session's autonomyLevel off: it allows only tools that read; nothing ran/);
    expect(execute('off', 'ls')).toMatch(/autonomyLevel off: it allows only tools that read, not commands/);
  });

  it('low allows file edits and commands that only read', () => {
    for (const tool of ['Create', 'Edit', 'ApplyPatch']) expect(autonomyRefusal('low', tool, {})).toBeNull();
    for (const command of [
      'ls -la',
      'grep -rn TODO src | sort | uniq -c',
      'cat a.txt 2>/dev/null',
      'find . -name "*.ts" -type f -print',
      'echo "a > b"',
      'wc -l $(ls)',
      'rg -n -e foo -g "*.ts" --max-count 3 src',
      'rg --json foo -- *.ts',
      'sort -k2 -n -t, a.csv | uniq -c',
      'tree -L 2 --dirsfirst',
      'date +%F',
      'node --version && npm ls --all',
      'test -f x && cat x',
      '[ -n "$HOME" ] && echo yes',
      'printf "%s\\n" a b',
      'cat <<EOF\nhello\nEOF',
      'head -n 5 a; tail -n 5 a',
    ]) {
      expect([command, execute('low', command)]).toEqual([command, null]);
    }
  });

  it('low refuses commands that change something: other programs, redirections into files, acting find, git writes', () => {
    for (const command of [
      'npm test',
      'echo hi > notes.txt',
      'cat a >> b',
      'ls &> out.txt',
      'find . -name "*.tmp" -delete',
      'find . -exec rm {} +',
      'git commit -m x',
      'git branch feature',
      'ls; touch x',
      'ls $(rm -rf x)',
      'sed -i s/a/b/ f',
    ]) {
      expect([command, execute('low', command)]).toEqual([
        command,
        expect.stringMatching(/^Refused by the session's autonomyLevel low: it runs only commands that read/),
      ]);
    }
    expect(execute('low', 'npm test')).toBe(
      'Refused by the session\'s autonomyLevel low: it runs only commands that read (ls, cat, grep, find ...), and "npm test" is not one of them (only with --version, -v, ls ..., list ...); nothing ran. Raise the session\'s autonomyLevel to allow it.',
    );
    expect(execute('low', 'touch x')).toBe(
      'Refused by the session\'s autonomyLevel low: it runs only commands that read (ls, cat, grep, find ...), and "touch x" is not one of them; nothing ran. Raise the session\'s autonomyLevel to allow it.',
    );
  });

  it('low refuses read-only programs given options that run programs or write files, however spelled', () => {
    for (const [command, why] of [
      ['rg --pre=./evil foo', 'has the option "--pre=./evil"'],
      ['rg --pre ./evil foo', 'has the option "--pre"'],
      ['rg --pre-glob "*" --pre ./evil foo', 'has the option "--pre-glob"'],
      ['rg -z foo', 'has the option "-z"'],
      ['rg -nz foo', 'has the option "-nz"'],
      ['rg --hostname-bin=./evil foo', 'has the option "--hostname-bin=./evil"'],
      ['rg foo *', 'has "*", which the shell expands to file names that could be options'],
      ['rg $(cat flags) foo', 'has "$(cat flags)", computed when it runs, which could be an option'],
      ['rg -e $X foo', 'has "$X", which the shell can turn into several words'],
      ['sort --compress-program=sh a', 'has the option "--compress-program=sh"'],
      ['sort --compress-prog=sh a', 'has the option "--compress-prog=sh"'],
      ['sort -o out a', 'has the option "-o"'],
      ['sort -ro out a', 'has the option "-ro"'],
      ['uniq a out', 'has more than 1 operand'],
      ['tree -o out', 'has the option "-o"'],
      ['tree -R -H . -o x', 'has the option "-R"'],
      ['date -s 2020-01-01', 'has the option "-s"'],
      ['date 010100002030', 'has the operand "010100002030"'],
      ['file -z a.gz', 'has the option "-z"'],
      ['find . -delete', 'has "-delete"'],
      ['find . -fprint out', 'has "-fprint"'],
      ['find . -name *.ts', 'has "*.ts", which the shell expands to file names that could be primaries'],
      ['find . -name "*.ts" -o -exec rm {} +', 'has "-exec"'],
      ['printf -v x %s a', 'starts with an option'],
      ["test -v 'a[$(touch x)]'", 'names a variable with a subscript that expands'],
      ['node -e "require(\'fs\')"', 'is not one of them (only with --version, -v)'],
      ['npm view left-pad', 'is not one of them (only with --version, -v, ls ..., list ...)'],
    ]) {
      expect([command, execute('low', command)]).toEqual([command, expect.stringContaining(`and ${JSON.stringify(command.replace(/\s+/g, ' '))} ${why}`)]);
    }
  });

  it('low refuses programs that run code by design, assignments that change what runs, and constructs bash evaluates', () => {
    for (const [command, why] of [
      ['env ls', '"env ls" is not one of them'],
      ['xargs ls', '"xargs ls" is not one of them'],
      ['less a', '"less a" is not one of them'],
      ['man ls', '"man ls" is not one of them'],
      ['awk \'BEGIN { system("id") }\'', 'is not one of them'],
      ['sed -n 1p f', '"sed -n 1p f" is not one of them'],
      ['bash -c ls', '"bash -c ls" is not one of them'],
      ['./ls', '"./ls" is not one of them'],
      ['$CMD a', '"$CMD a" runs a program named only when it runs'],
      ['LESSOPEN="|./x %s" ls', 'sets variables, which can change what a program runs'],
      ['LD_PRELOAD=./x.so ls', 'sets variables, which can change what a program runs'],
      ['X=1', 'sets variables'],
      ['echo $((1 + 2))', '"$((1 + 2))" is arithmetic'],
      ['[[ -f x ]] && cat x', "is bash's [[ test"],
      ['f() { ls; }; f', 'defines a function'],
      ['for f in *; do cat "$f"; done', 'sets a variable from words'],
      ['echo {a,b}', 'which bash expands into several words'],
      ['{ ls; } > out', '"> out" writes to a file'],
      ['cat <<EOF\n$(touch x)\nEOF', '"touch x" is not one of them'],
      ['echo `touch x`', '"touch x" is not one of them'],
      ["echo 'unclosed", 'the command could not be parsed'],
    ]) {
      expect([command, execute('low', command)]).toEqual([command, expect.stringContaining(why)]);
    }
  });

  it('low refuses git, whose repository config can name programs that even git status runs', () => {
    // What the refusal is about: a repository whose .git/config names a program for core.fsmonitor.
    const repo = mkdtempSync(join(tmpdir(), 'autonomy-git-'));
    try {
      const git = (...args: string[]) =>
        execFileSync('git', args, { cwd: repo, stdio: 'pipe', env: { PATH: process.env.PATH, HOME: repo, GIT_CONFIG_NOSYSTEM: '1' } });
      git('init', '-q');
      writeFileSync(join(repo, 'monitor.sh'), '#!/bin/sh\ntouch ran-by-git\n', { mode: 0o755 });
      git('config', 'core.fsmonitor', join(repo, 'monitor.sh'));
      git('status');
      expect(existsSync(join(repo, 'ran-by-git'))).toBe(true);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
    for (const command of ['git status', 'git diff HEAD~1', 'git log --oneline -5 2>&1', 'git -c core.fsmonitor= status', 'ls && git show']) {
      expect([command, execute('low', command)]).toEqual([
        command,
        expect.stringContaining("is git, which runs programs named in the repository's own config"),
      ]);
    }
  });

  it('medium runs what can be undone and refuses what cannot, however it is spelled', () => {
    for (const command of [
      'npm install && npm test',
      'git add -A && git commit -m "wip"',
      'mkdir -p build && cp a build/',
      'rm notes.txt',
      'git checkout -b topic',
    ]) {
      expect([command, execute('medium', command)]).toEqual([command, null]);
    }
    for (const [command, rule] of [
      ['git push origin main', 'git push'],
      ['npm run build && npm publish', 'npm publish'],
      ['rm -rf build', 'rm -rf'],
      ['sudo apt-get install x', 'sudo'],
      ['sh -c "git push"', 'git push'],
      ['/usr/bin/ssh host', 'ssh'],
      ['git reset --hard HEAD~3', 'git reset --hard'],
    ]) {
      expect([command, execute('medium', command)]).toEqual([
        command,
        expect.stringContaining(`autonomyLevel medium: it does not run irreversible commands ("${rule}")`),
      ]);
    }
  });
});
