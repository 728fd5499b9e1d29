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
    for (const tool of ['Create', 'Edit', 'ApplyPatch']) expect(autonomyRefusal('off', tool, {})).toMatch(/^Refused by the session's autonomyLevel off: it allows only tools that read; nothing ran/);
    expect(execute('off', 'ls')).toMatch(/autonomyLevel off: it allows only tools that read, not commands/);
  });

  it('low allows file edits and commands that only read', () => {
    for (const tool of ['Create', 'Edit', 'ApplyPatch']) expect(autonomyRefusal('low', tool, {})).toBeNull();
    for (const command of ['ls -la', 'git status && git diff HEAD~1', 'grep -rn TODO src | sort | uniq -c', 'cat a.txt 2>/dev/null', 'find . -name "*.ts"', 'git log --oneline -5 2>&1', 'echo "a > b"']) {
      expect([command, execute('low', command)]).toEqual([command, null]);
    }
  });

  it('low refuses commands that change something: other programs, redirections into files, acting find, git writes', () => {
    for (const command of ['npm test', 'echo hi > notes.txt', 'cat a >> b', 'ls &> out.txt', 'find . -name "*.tmp" -delete', 'find . -exec rm {} +', 'git commit -m x', 'git branch feature', 'ls; touch x', 'ls $(rm -rf x)', 'sed -i s/a/b/ f']) {
      expect([command, execute('low', command)]).toEqual([command, expect.stringMatching(/^Refused by the session's autonomyLevel low: it runs only commands that read/)]);
    }
  });

  it('medium runs what can be undone and refuses what cannot, however it is spelled', () => {
    for (const command of ['npm install && npm test', 'git add -A && git commit -m "wip"', 'mkdir -p build && cp a build/', 'rm notes.txt', 'git checkout -b topic']) {
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
      expect([command, execute('medium', command)]).toEqual([command, expect.stringContaining(`autonomyLevel medium: it does not run irreversible commands ("${rule}")`)]);
    }
  });
});
