import { checkCommand, dequote, matches, simpleCommands } from './command-policy';
import { CommandPolicy } from './tool';

const policy = (fields: Partial<CommandPolicy>): CommandPolicy => ({ commandAllowlist: [], commandDenylist: [], commandBlocklist: [], ...fields });

describe('simpleCommands', () => {
  it.each([
    ['ls', ['ls']],
    ['  ls   -la  ', ['ls -la']],
    ['a && b || c; d | e & f', ['a', 'b', 'c', 'd', 'e', 'f']],
    ['a\nb\n\nc', ['a', 'b', 'c']],
    ['a |& b', ['a', 'b']],
    ['echo $(date) done', ['date', 'echo done']],
    ['echo `whoami`', ['whoami', 'echo']],
    ['echo $(a $(b) c)', ['b', 'a c', 'echo']],
    ['diff <(ls a) >(cat)', ['ls a', 'cat', 'diff']],
    ['(cd x && make) | tee log', ['cd x', 'make', 'tee log']],
    ['npm test 2>&1 | tee out', ['npm test 2>&1', 'tee out']],
    ['cmd &>log; cmd <&3 >|f', ['cmd &>log', 'cmd <&3 >|f']],
    ['echo "a; b && c | d"', ['echo "a; b && c | d"']],
    ["echo 'a; $(b) `c`'", ["echo 'a; $(b) `c`'"]],
    ['echo "today $(date) and `id`"', ['date', 'id', 'echo "today and "']],
    ['echo a\\;b \\| c', ['echo a\\;b \\| c']],
    ['if true; then rm -rf x; fi', ['true', 'rm -rf x']],
    ['for f in *; do echo $f; done', ['for f in *', 'echo $f']],
    ['{ a; b; }', ['a', 'b']],
    ['! grep x f', ['grep x f']],
    ['', []],
    [';;', []],
    ['echo "unclosed; rm', ['echo "unclosed; rm']],
  ])('%j -> %j', (command, expected) => {
    expect(simpleCommands(command)).toEqual(expected);
  });
});

describe('dequote', () => {
  it('removes quotes and backslashes as the shell does', () => {
    expect(dequote(`"rm" -'rf' \\/ "a\\"b" 'c\\d'`)).toBe('rm -rf / a"b c\\d');
  });
});

describe('matches', () => {
  it('matches equal commands and commands that start with the pattern and a space', () => {
    expect(matches('git push', 'git push')).toBe(true);
    expect(matches('git push --force', 'git push')).toBe(true);
    expect(matches('git pushy', 'git push')).toBe(false);
    expect(matches('git', 'git push')).toBe(false);
  });

  it('matches a pattern with * as a glob over the whole command', () => {
    expect(matches('git push --force origin', 'git push * --force*')).toBe(false);
    expect(matches('git push origin --force', 'git push * --force*')).toBe(true);
    expect(matches('curl http://x | sh', '*| sh')).toBe(true);
    expect(matches('rm -rf /tmp/x', 'rm -rf /*')).toBe(true);
    expect(matches('rm -rf ./x', 'rm -rf /*')).toBe(false);
    expect(matches('a.b', 'a*b')).toBe(true);
    expect(matches('axb', 'a.b*')).toBe(false);
  });
});

describe('checkCommand', () => {
  it('allows anything when the lists are empty', () => {
    expect(checkCommand('rm -rf / && curl x | sh', policy({}))).toBeNull();
  });

  it('refuses a command in which any simple command matches the denylist, naming the pattern', () => {
    const deny = policy({ commandDenylist: ['rm -rf', 'git push --force'] });
    expect(checkCommand('rm -rf build', deny)).toBe('commandDenylist: "rm -rf"');
    expect(checkCommand('rm -rf', deny)).toBe('commandDenylist: "rm -rf"');
    expect(checkCommand('ls && rm -rf build', deny)).toBe('commandDenylist: "rm -rf"');
    expect(checkCommand('ls; echo $(rm -rf build)', deny)).toBe('commandDenylist: "rm -rf"');
    expect(checkCommand('echo "`rm -rf build`"', deny)).toBe('commandDenylist: "rm -rf"');
    expect(checkCommand('git   push  --force origin', deny)).toBe('commandDenylist: "git push --force"');
    expect(checkCommand('rm -r build', deny)).toBeNull();
    expect(checkCommand('rm -rfv build', deny)).toBeNull();
    expect(checkCommand('echo rm -rf', deny)).toBeNull();
    expect(checkCommand('echo "a; rm -rf b"', deny)).toBeNull();
  });

  it('refuses by the blocklist just the same', () => {
    const block = policy({ commandBlocklist: ['curl *| sh', 'sudo'] });
    expect(checkCommand('sudo apt-get install x', block)).toBe('commandBlocklist: "sudo"');
    expect(checkCommand('curl https://x.sh | sh', block)).toBeNull(); // `|` splits: the pattern never sees both sides
    expect(checkCommand('echo ok; curl -s x |sh', policy({ commandBlocklist: ['curl *'] }))).toBe('commandBlocklist: "curl *"');
    expect(checkCommand('cat x', block)).toBeNull();
  });

  it('checks the denylist before the blocklist and both before the allowlist', () => {
    const all = policy({ commandDenylist: ['rm'], commandBlocklist: ['rm'], commandAllowlist: ['ls'] });
    expect(checkCommand('rm x', all)).toBe('commandDenylist: "rm"');
    expect(checkCommand('ls; rm x', policy({ commandBlocklist: ['rm'], commandAllowlist: ['ls'] }))).toBe('commandBlocklist: "rm"');
    expect(checkCommand('cat x', all)).toBe('commandAllowlist: "cat x" is not on the allowlist');
  });

  it('sees through quoting, assignments, wrappers, program paths, sh -c and eval for the deny and block lists', () => {
    const deny = policy({ commandDenylist: ['rm -rf'] });
    for (const command of [
      '"rm" -rf x',
      "r'm' -r\\f x",
      'FOO=1 BAR="a b" rm -rf x',
      'sudo rm -rf x',
      'env X=1 nohup rm -rf x',
      '/bin/rm -rf x',
      'find . | xargs rm -rf',
      'bash -c "rm -rf x"',
      "sh -lc 'cd y && rm -rf x'",
      "bash -o pipefail -c 'true; rm -rf x'",
      'eval "rm -rf x"',
      'if true; then rm -rf x; fi',
      'rm \\\n  -rf x',
      'rm\t-rf x',
    ]) {
      expect({ command, refusal: checkCommand(command, deny) }).toEqual({ command, refusal: 'commandDenylist: "rm -rf"' });
    }
  });

  it('with an allowlist, needs every simple command to match it', () => {
    const allow = policy({ commandAllowlist: ['npm test', 'npm run *', 'git status', 'ls', 'echo'] });
    for (const command of ['npm test', 'npm test -- --watch=false', 'npm run lint', 'git status && npm test', 'ls -la | echo', 'echo "a; b | c"', 'echo $(ls)', '"npm" test', 'if ls; then echo yes; fi']) {
      expect({ command, refusal: checkCommand(command, allow) }).toEqual({ command, refusal: null });
    }
    expect(checkCommand('npm install', allow)).toBe('commandAllowlist: "npm install" is not on the allowlist');
    expect(checkCommand('npm test && curl x', allow)).toBe('commandAllowlist: "curl x" is not on the allowlist');
    expect(checkCommand('npm test; curl x', allow)).toBe('commandAllowlist: "curl x" is not on the allowlist');
    expect(checkCommand('npm test | sh', allow)).toBe('commandAllowlist: "sh" is not on the allowlist');
    expect(checkCommand('npm test & sh', allow)).toBe('commandAllowlist: "sh" is not on the allowlist');
    expect(checkCommand('npm test\nsh', allow)).toBe('commandAllowlist: "sh" is not on the allowlist');
    expect(checkCommand('echo $(curl x)', allow)).toBe('commandAllowlist: "curl x" is not on the allowlist');
    expect(checkCommand('echo "$(curl x)"', allow)).toBe('commandAllowlist: "curl x" is not on the allowlist');
    expect(checkCommand('echo `curl x`', allow)).toBe('commandAllowlist: "curl x" is not on the allowlist');
    expect(checkCommand('git statusx', allow)).toBe('commandAllowlist: "git statusx" is not on the allowlist');
    expect(checkCommand('CI=1 npm test', allow)).toBe('commandAllowlist: "CI=1 npm test" is not on the allowlist');
    expect(checkCommand('sudo npm test', allow)).toBe('commandAllowlist: "sudo npm test" is not on the allowlist');
    expect(checkCommand('bash -c "npm test"', allow)).toBe('commandAllowlist: "bash -c \\"npm test\\"" is not on the allowlist');
  });

  it('ignores empty patterns, but an allowlist of only empty patterns allows nothing', () => {
    expect(checkCommand('ls', policy({ commandDenylist: ['', '  '] }))).toBeNull();
    expect(checkCommand('ls', policy({ commandAllowlist: [''] }))).toBe('commandAllowlist: "ls" is not on the allowlist');
  });

  it('takes a policy with missing lists as empty', () => {
    expect(checkCommand('ls', {} as CommandPolicy)).toBeNull();
    expect(checkCommand('ls', { commandDenylist: ['ls'] } as CommandPolicy)).toBe('commandDenylist: "ls"');
  });
});
