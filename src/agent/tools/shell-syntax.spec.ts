import { Dialect, parseShell, ShellSyntaxError } from './shell-syntax';

const commandsOf = (line: string, dialect: Dialect = 'bash') => parseShell(line, dialect).commands.map((c) => c.raw);
const valuesOf = (line: string, dialect: Dialect = 'bash') => parseShell(line, dialect).commands[0].words.map((w) => w.value);

describe('parseShell', () => {
  it.each([
    ['ls', ['ls']],
    ['  ls   -la  ', ['ls -la']],
    ['a && b || c; d | e & f', ['a', 'b', 'c', 'd', 'e', 'f']],
    ['a\nb\n\nc', ['a', 'b', 'c']],
    ['a |& b', ['a', 'b']],
    ['echo $(date) done', ['echo $(date) done', 'date']],
    ['echo `whoami`', ['echo `whoami`', 'whoami']],
    ['echo $(a $(b) c)', ['echo $(a $(b) c)', 'a $(b) c', 'b']],
    ['echo `echo \\`id -u\\``', ['echo `echo \\`id -u\\``', 'echo \\`id -u\\`', 'id -u\\']],
    ['diff <(ls a) >(cat)', ['diff <(ls a) >(cat)', 'ls a', 'cat']],
    ['(cd x && make) | tee log', ['cd x', 'make', 'tee log']],
    ['npm test 2>&1 | tee out', ['npm test 2>&1', 'tee out']],
    ['cmd &>log; cmd <&3 >|f', ['cmd &>log', 'cmd <&3 >|f']],
    ['echo "a; b && c | d"', ['echo "a; b && c | d"']],
    ["echo 'a; $(b) `c`'", ["echo 'a; $(b) `c`'"]],
    ['echo "today $(date) and `id`"', ['echo "today $(date) and `id`"', 'date', 'id']],
    ['echo a\\;b \\| c', ['echo a\\;b \\| c']],
    ['if true; then rm -rf x; elif a; then b; else c; fi', ['true', 'rm -rf x', 'a', 'b', 'c']],
    ['for f in $(ls); do echo $f; done', ['ls', 'echo $f']],
    ['while read l; do rm "$l"; done < list', ['read l', 'rm "$l"']],
    ['case $(id) in a) rm x;; esac', ['id', 'rm x']],
    ['f() { rm -rf x; }; f', ['rm -rf x', 'f']],
    ['{ a; b; }', ['a', 'b']],
    ['! grep x f', ['grep x f']],
    ['time rm -rf x', ['rm -rf x']],
    ['x=$(id) ls', ['x=$(id) ls', 'id']],
    ['export X=$(id)', ['export X=$(id)', 'id']],
    ['echo ${x:-$(id)} ${y:=`whoami`}', ['echo ${x:-$(id)} ${y:=`whoami`}', 'id', 'whoami']],
    ['echo $((1 + $(id)))', ['echo $((1 + $(id)))', 'id']],
    ['cat <<EOF\nhello $(id) `whoami`\nEOF', ['cat <<EOF', 'id', 'whoami']],
    ['cat <<-EOF\n\t$(id)\n\tEOF', ['cat <<-EOF', 'id']],
    ["cat <<'EOF'\nhello $(id)\nEOF", ["cat <<'EOF'"]],
    ['echo é && rm -rf é', ['echo é', 'rm -rf é']],
    ['> out', ['> out']],
    ['', []],
  ])('%j runs %j', (line, expected) => {
    expect(commandsOf(line)).toEqual(expected);
  });

  it('gives each word its value, with quotes and escapes removed, or null when it expands', () => {
    expect(valuesOf(`"r"m -'rf' \\/ "a\\"b" 'c\\d' a\\ b $x "$(y)" $'\\x41\\n'`)).toEqual(['rm', '-rf', '/', 'a"b', 'c\\d', 'a b', null, null, 'A\n']);
    // /bin/sh does not know $'...': it is a $ and a quoted string.
    expect(valuesOf("echo $'\\x41'", 'posix')).toEqual(['echo', '$\\x41']);
  });

  it('joins simple commands into chains by their operators', () => {
    const { chains } = parseShell('curl x | tee f | sh && ok || ko; (sub) & last', 'bash');
    expect(chains.map((c) => [c.kind, c.elements.map((e) => e?.raw ?? null), c.ops])).toEqual([
      ['pipe', ['curl x', 'tee f', 'sh'], ['|', '|']],
      ['andor', [null, 'ok', 'ko'], ['&&', '||']],
      ['list', [null, null, 'last'], [';', '&']],
    ]);
  });

  it('notes the constructs some checks refuse', () => {
    const constructs = (line: string) => [...parseShell(line, 'bash').constructs.keys()];
    expect(constructs('echo $((1 + 2))')).toEqual(['arithmetic']);
    expect(constructs('echo $((x)) ${a[i]}')).toEqual(['arithmetic', 'dynamicArithmetic']);
    expect(constructs('[[ -f x ]]')).toEqual(['testClause']);
    expect(constructs('[[ $x -eq 1 ]]')).toEqual(['testClause', 'arithmetic', 'dynamicArithmetic']);
    expect(constructs('f() { :; }; for i in a; do :; done; echo ${!x} ${x@P}')).toEqual(['function', 'loopVariable', 'indirection', 'transformation']);
    expect(parseShell('echo {rm,-rf,x} a*b', 'bash').commands[0].words.map((w) => [w.braces, w.glob])).toEqual([
      [false, false],
      [true, false],
      [false, true],
    ]);
  });

  it('reads a line as /bin/sh does or as bash does, which differ', () => {
    // dash runs ((touch x)) as two subshells around `touch x`; bash reads arithmetic, which this is not.
    expect(commandsOf('((touch x))', 'posix')).toEqual(['touch x']);
    expect(() => parseShell('((touch x))', 'bash')).toThrow(ShellSyntaxError);
    // bash reads one $'...' string; dash reads `$`, a quoted backslash, and runs `touch x`.
    expect(commandsOf("echo $'\\' ; touch x ; echo \\''", 'bash')).toEqual(["echo $'\\' ; touch x ; echo \\''"]);
    expect(() => parseShell("echo $'\\' ; touch x ; echo \\''", 'posix')).toThrow(ShellSyntaxError);
  });

  it('refuses what it cannot read', () => {
    for (const line of ['echo (', "echo 'unclosed", 'echo $(', 'if true; then']) expect(() => parseShell(line, 'bash')).toThrow(ShellSyntaxError);
    // Shells take these single quotes literally and run the $(...); the parser would read a quoted string.
    expect(() => parseShell(`echo "\${x:-'$(touch x)'}"`, 'bash')).toThrow(/single quotes inside a double-quoted/);
    // Three levels of backquotes: bash runs the innermost, the parser reads it as text.
    expect(() => parseShell('echo `echo \\`echo \\\\\\`touch x\\\\\\`\\``', 'bash')).toThrow(/backquotes nested more than two deep/);
  });
});
