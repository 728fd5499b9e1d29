import type { ShNode, ShPos } from 'mvdan-sh';
import { createRequire } from 'node:module';

/**
 * Which shell reads a command line. Execute runs `/bin/sh -c` (dash on Debian: POSIX), and the sandbox
 * runs commands with bash, so the command policy reads every command line both ways.
 */
export type Dialect = 'posix' | 'bash';

/** One word of a command line. */
export interface ShellWord {
  /** As written. */
  raw: string;
  /** Quotes and escapes removed, expansions (`$x`, `$(...)`) kept as written. */
  text: string;
  /** What the shell passes on, when the word is literal (no expansion); otherwise null. */
  value: string | null;
  /** An expansion outside double quotes: the shell may split its result into several words. */
  splits: boolean;
  /** An unquoted `*`, `?`, `[` or extended glob: the shell may replace the word with file names. */
  glob: boolean;
  /** bash brace expansion (`{a,b}`, `{1..3}`): bash makes several words of it. */
  braces: boolean;
}

export interface ShellRedirect {
  /** The operator: `>`, `>>`, `<`, `<<`, `<<-`, `<<<`, `>&`, `<&`, `<>`, `>|`, `&>`, `&>>`. */
  op: string;
  /** The file descriptor written before the operator (`2` of `2>&1`), or null. */
  fd: string | null;
  /** The file, descriptor or here-document delimiter after the operator. */
  target: ShellWord;
  /** A here-document's body: its text and, when it has no expansion, its value. */
  heredoc: { text: string; value: string | null } | null;
  /** As written (a here-document without its body). */
  raw: string;
}

/** A simple command: words run as one program, with the assignments and redirections written with it. */
export interface SimpleCommand {
  assigns: ShellWord[];
  words: ShellWord[];
  redirects: ShellRedirect[];
  /** As written, whitespace runs as one space. */
  raw: string;
  dialect: Dialect;
}

/** Simple commands joined by one kind of operator: a pipeline (`|`), an and-or list (`&&`, `||`) or a list (`;`, `&`, newline). */
export interface Chain {
  kind: 'pipe' | 'andor' | 'list';
  /** Each element: a simple command, or null for a compound one (subshell, block, loop ...). */
  elements: Array<SimpleCommand | null>;
  /** The operator between element i and i+1 (`|` or `|&`; `&&` or `||`; `;` or `&`). */
  ops: string[];
}

/** Shell constructs that some checks refuse, with the first place each was written. */
export type Construct =
  | 'arithmetic' // $((...)), ((...)), let, ${a[i]}, ${a:i:n}, for ((...))
  | 'dynamicArithmetic' // arithmetic over variables or command output: bash evaluates them as expressions, a[$(cmd)] included
  | 'codeInArithmetic' // a literal operand with $ or ` in it ([[ 'a[$(cmd)]' -eq 1 ]]): bash runs that code
  | 'testClause' // [[ ... ]]
  | 'function' // a function definition
  | 'loopVariable' // for/select set a variable from words
  | 'coproc'
  | 'indirection' // ${!name}
  | 'transformation'; // ${x@P} and the other @ operators

export interface ShellScript {
  /** Every simple command, at any depth (lists, pipelines, compound commands, substitutions), outer before inner. */
  commands: SimpleCommand[];
  chains: Chain[];
  /** Redirections of compound commands (`{ ...; } > file`, `done < file`). */
  compoundRedirects: ShellRedirect[];
  constructs: Map<Construct, string>;
}

/** The command line is not valid shell (in the dialect it was read in), or uses syntax this reader does not know. */
export class ShellSyntaxError extends Error {}

type Syntax = (typeof import('mvdan-sh'))['syntax'];
let loaded: Syntax | undefined;

/**
 * mvdan-sh, loaded on first use (about 80 ms). Loading it (GopherJS) sets `Error.stackTraceLimit` to
 * Infinity and a global `require` for the whole process; both are put back.
 */
function sh(): Syntax {
  if (loaded) return loaded;
  const stackTraceLimit = Error.stackTraceLimit;
  const globalRequire = Object.getOwnPropertyDescriptor(globalThis, 'require');
  try {
    loaded = (createRequire(__filename)('mvdan-sh') as typeof import('mvdan-sh')).syntax;
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
    if (globalRequire) Object.defineProperty(globalThis, 'require', globalRequire);
    else delete (globalThis as { require?: unknown }).require;
  }
  return loaded;
}
const REDIRECT_OPS = ['&>>', '<<<', '<<-', '&>', '>>', '<<', '<&', '>&', '<>', '>|', '<', '>'];
/** Node types the reader turns into simple commands; the cross-check counts them in the whole tree. */
const SIMPLE_TYPES = new Set(['CallExpr', 'DeclClause', 'LetClause', 'TestClause']);
const ARITHMETIC_TESTS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
const NUMBER = /^(0[xX][0-9a-fA-F]+|[0-9]+(#[0-9a-zA-Z@_]+)?)$/;

/** Whitespace runs (and escaped line ends) as one space, trimmed. */
export const normalize = (text: string): string => text.replace(/\\\n/g, ' ').replace(/\s+/g, ' ').trim();

/** Parses a command line with mvdan/sh's parser (`mvdan-sh`) and reads what it runs. Throws ShellSyntaxError. */
export function parseShell(source: string, dialect: Dialect): ShellScript {
  const syntax = sh();
  let file: ShNode;
  try {
    file = syntax.NewParser(syntax.KeepComments(false), syntax.Variant(dialect === 'posix' ? syntax.LangPOSIX : syntax.LangBash)).Parse(source, '');
  } catch (error) {
    throw new ShellSyntaxError(describeError(error));
  }
  const reader = new Reader(source, dialect);
  reader.list(children(file, 'Stmts'));
  let inTree = 0;
  syntax.Walk(file, (n) => {
    if (n !== null && SIMPLE_TYPES.has(syntax.NodeType(n))) inTree += 1;
    return true;
  });
  // Every simple command in the tree must have been read; a node type the reader does not walk fails closed.
  if (inTree !== reader.fromTree) throw new ShellSyntaxError(`the reader found ${reader.fromTree} of the ${inTree} simple commands in the syntax tree`);
  return reader.script;
}

function describeError(error: unknown): string {
  if (typeof (error as { Error?: unknown })?.Error === 'function') return String((error as { Error(): string }).Error());
  return error instanceof Error ? error.message : String(error);
}

/** Accumulates what a part of a word contributes to it. */
interface WordState {
  text: string;
  literal: boolean;
  splits: boolean;
  glob: boolean;
  braceOpen: boolean;
  braceSeparated: boolean;
  braces: boolean;
}

class Reader {
  readonly script: ShellScript = { commands: [], chains: [], compoundRedirects: [], constructs: new Map() };
  /** Simple commands read from tree nodes (not redirection-only statements). */
  fromTree = 0;
  /** How many backquoted substitutions the reader is inside. */
  private backquotes = 0;
  private readonly bytes: Buffer;

  constructor(
    source: string,
    private readonly dialect: Dialect,
  ) {
    this.bytes = Buffer.from(source, 'utf8');
  }

  /** A list of statements: each is read, and together they are a chain of kind `list`. */
  list(stmts: ShNode[]): void {
    const elements = stmts.map((s) => this.stmt(s));
    if (stmts.length > 1) this.script.chains.push({ kind: 'list', elements, ops: stmts.slice(0, -1).map((s) => (flag(s, 'Background') ? '&' : ';')) });
  }

  /** One statement; returns it as a simple command, or null when it is compound. */
  private stmt(s: ShNode): SimpleCommand | null {
    const cmd = child(s, 'Cmd');
    if (cmd !== null && type(cmd) === 'BinaryCmd') return this.chain(s, cmd);
    if (cmd !== null && type(cmd) === 'TimeClause') {
      for (const r of children(s, 'Redirs')) this.script.compoundRedirects.push(this.redirect(r));
      const inner = child(cmd, 'Stmt');
      return inner === null ? null : this.stmt(inner);
    }
    if (cmd === null) return this.simple(null, s, () => ({ assigns: [], words: [] }));
    switch (type(cmd)) {
      case 'CallExpr':
        return this.simple(cmd, s, () => ({
          assigns: children(cmd, 'Assigns').map((a) => this.assign(a)),
          words: children(cmd, 'Args').map((w) => this.word(w)),
        }));
      case 'DeclClause':
        return this.simple(cmd, s, () => ({
          assigns: [],
          words: [literalWord(text(child(cmd, 'Variant'), 'Value')), ...children(cmd, 'Args').map((a) => this.assign(a))],
        }));
      case 'LetClause':
        this.note('arithmetic', cmd);
        return this.simple(cmd, s, () => ({ assigns: [], words: [literalWord('let'), ...children(cmd, 'Exprs').map((e) => this.arithm(e, cmd))] }));
      case 'TestClause':
        this.note('testClause', cmd);
        return this.simple(cmd, s, () => {
          this.test(child(cmd, 'X'), cmd);
          return {
            assigns: [],
            words: this.raw(cmd)
              .split(/\s+/)
              .map((token) => ({ ...literalWord(token), value: /[$`'"\\]/.test(token) ? null : token })),
          };
        });
      default:
        for (const r of children(s, 'Redirs')) this.script.compoundRedirects.push(this.redirect(r));
        this.compound(cmd);
        return null;
    }
  }

  /** A simple command: registered before its words are read, so it comes before the commands inside them. */
  private simple(cmd: ShNode | null, s: ShNode, read: () => { assigns: ShellWord[]; words: ShellWord[] }): SimpleCommand {
    const command: SimpleCommand = { assigns: [], words: [], redirects: [], raw: '', dialect: this.dialect };
    this.script.commands.push(command);
    if (cmd !== null) this.fromTree += 1;
    const { assigns, words } = read();
    command.assigns = assigns;
    command.words = words;
    command.redirects = children(s, 'Redirs').map((r) => this.redirect(r));
    command.raw = normalize([cmd === null ? '' : this.raw(cmd), ...command.redirects.map((r) => r.raw)].join(' '));
    return command;
  }

  /** A pipeline or an and-or list, flattened: `a | b | c` is one chain of three. */
  private chain(s: ShNode, cmd: ShNode): null {
    const kind = this.operator(cmd).startsWith('|') && this.operator(cmd) !== '||' ? 'pipe' : 'andor';
    const elements: Array<SimpleCommand | null> = [];
    const ops: string[] = [];
    const visit = (stmt: ShNode) => {
      const inner = child(stmt, 'Cmd');
      if (inner !== null && type(inner) === 'BinaryCmd' && children(stmt, 'Redirs').length === 0) {
        const op = this.operator(inner);
        if ((op === '|' || op === '|&') === (kind === 'pipe')) {
          visit(child(inner, 'X')!);
          ops.push(op);
          visit(child(inner, 'Y')!);
          return;
        }
      }
      elements.push(this.stmt(stmt));
    };
    visit(child(cmd, 'X')!);
    ops.push(this.operator(cmd));
    visit(child(cmd, 'Y')!);
    this.script.chains.push({ kind, elements, ops });
    for (const r of children(s, 'Redirs')) this.script.compoundRedirects.push(this.redirect(r));
    return null;
  }

  private operator(binary: ShNode): string {
    const at = (binary.OpPos as ShPos).Offset();
    const two = this.bytes.subarray(at, at + 2).toString('utf8');
    return ['&&', '||', '|&'].includes(two) ? two : '|';
  }

  private compound(cmd: ShNode): void {
    switch (type(cmd)) {
      case 'Block':
      case 'Subshell':
        return this.list(children(cmd, 'Stmts'));
      case 'IfClause':
        this.list(children(cmd, 'Cond'));
        this.list(children(cmd, 'Then'));
        if (child(cmd, 'Else') !== null) this.compound(child(cmd, 'Else')!);
        return;
      case 'WhileClause':
        this.list(children(cmd, 'Cond'));
        return this.list(children(cmd, 'Do'));
      case 'ForClause': {
        const loop = child(cmd, 'Loop')!;
        if (type(loop) === 'WordIter') {
          this.note('loopVariable', cmd);
          children(loop, 'Items').forEach((w) => this.word(w));
        } else {
          for (const field of ['Init', 'Cond', 'Post']) if (child(loop, field) !== null) this.arithm(child(loop, field)!, loop);
        }
        return this.list(children(cmd, 'Do'));
      }
      case 'CaseClause':
        this.word(child(cmd, 'Word')!);
        for (const item of children(cmd, 'Items')) {
          children(item, 'Patterns').forEach((w) => this.word(w));
          this.list(children(item, 'Stmts'));
        }
        return;
      case 'FuncDecl':
        this.note('function', cmd);
        this.stmt(child(cmd, 'Body')!);
        return;
      case 'ArithmCmd':
        this.arithm(child(cmd, 'X')!, cmd);
        return;
      case 'CoprocClause':
        this.note('coproc', cmd);
        this.stmt(child(cmd, 'Stmt')!);
        return;
      default:
        throw new ShellSyntaxError(`the policy does not read the shell construct ${type(cmd)} (${normalize(this.raw(cmd))})`);
    }
  }

  private redirect(r: ShNode): ShellRedirect {
    const at = (r.OpPos as ShPos).Offset();
    const op = REDIRECT_OPS.find((o) => this.bytes.subarray(at, at + o.length).toString('utf8') === o) ?? '>';
    const n = child(r, 'N');
    const targetNode = child(r, 'Word')!;
    const target = this.word(targetNode);
    const body = child(r, 'Hdoc');
    const quotedDelimiter = target.raw !== target.text;
    return {
      op,
      fd: n === null ? null : text(n, 'Value'),
      target,
      heredoc: body === null ? null : this.heredoc(body, quotedDelimiter),
      raw: normalize(this.slice(r.Pos().Offset(), targetNode.End().Offset())),
    };
  }

  /** A here-document's body: literal with a quoted delimiter; otherwise expansions in it run (and are read). */
  private heredoc(body: ShNode, quotedDelimiter: boolean): { text: string; value: string | null } {
    const raw = this.raw(body);
    if (quotedDelimiter) return { text: raw, value: raw };
    const state = newState();
    for (const part of children(body, 'Parts')) this.part(part, state, { double: true, expansionInDouble: false });
    return { text: raw, value: state.literal ? raw.replace(/\\([$`\\\n])/g, (_, c: string) => (c === '\n' ? '' : c)) : null };
  }

  private assign(a: ShNode): ShellWord {
    const name = child(a, 'Name');
    const value = child(a, 'Value');
    const index = child(a, 'Index');
    const array = child(a, 'Array');
    if (index !== null) this.arithm(index, a);
    const valueWord = value === null ? null : this.word(value);
    if (array !== null) {
      for (const elem of children(array, 'Elems')) {
        if (child(elem, 'Index') !== null) this.arithm(child(elem, 'Index')!, elem);
        if (child(elem, 'Value') !== null) this.word(child(elem, 'Value')!);
      }
    }
    if (flag(a, 'Naked')) return valueWord ?? literalWord(text(name, 'Value'));
    const raw = this.raw(a);
    const literal = index === null && array === null && (valueWord === null || valueWord.value !== null);
    const written = index === null && array === null ? `${text(name, 'Value')}${flag(a, 'Append') ? '+=' : '='}${valueWord?.text ?? ''}` : raw;
    return { raw, text: written, value: literal ? written : null, splits: false, glob: false, braces: false };
  }

  private word(w: ShNode): ShellWord {
    const state = newState();
    for (const part of children(w, 'Parts')) this.part(part, state, { double: false, expansionInDouble: false });
    return {
      raw: this.raw(w),
      text: state.text,
      value: state.literal ? state.text : null,
      splits: state.splits,
      glob: state.glob,
      braces: this.dialect === 'bash' && state.braces,
    };
  }

  private part(p: ShNode, state: WordState, where: { double: boolean; expansionInDouble: boolean }): void {
    switch (type(p)) {
      case 'Lit': {
        const value = text(p, 'Value');
        // A backquote left in a literal inside backquotes is the escaping of a deeper substitution,
        // which bash runs and the parser (mvdan-sh 0.10) reads as text beyond two levels.
        if (this.backquotes > 0 && value.includes('`'))
          throw new ShellSyntaxError(`backquotes nested more than two deep (${normalize(value)}) are read differently by bash and by the parser`);
        if (where.double) state.text += value.replace(/\\([$`"\\\n])/g, (_, c: string) => (c === '\n' ? '' : c));
        else this.bare(value, state);
        return;
      }
      case 'SglQuoted': {
        // Inside a double-quoted ${...}, shells take single quotes literally and run the $(...) between them,
        // while the parser reads a quoted string: the command cannot be checked.
        if (where.expansionInDouble)
          throw new ShellSyntaxError(
            `single quotes inside a double-quoted \${...} (${normalize(this.raw(p))}) are read differently by shells and by the parser`,
          );
        const value = text(p, 'Value');
        state.text += flag(p, 'Dollar') ? decodeAnsiC(value) : value;
        return;
      }
      case 'DblQuoted':
        for (const part of children(p, 'Parts')) this.part(part, state, { double: true, expansionInDouble: where.expansionInDouble });
        return;
      case 'ParamExp':
        this.expansion(state, p, where.double);
        this.param(p, where.double || where.expansionInDouble);
        return;
      case 'CmdSubst':
      case 'ProcSubst': {
        this.expansion(state, p, where.double);
        const quoted = flag(p, 'Backquotes');
        if (quoted) this.backquotes += 1;
        this.list(children(p, 'Stmts'));
        if (quoted) this.backquotes -= 1;
        return;
      }
      case 'ArithmExp':
        this.expansion(state, p, where.double);
        this.arithm(child(p, 'X')!, p);
        return;
      case 'ExtGlob':
        state.text += this.raw(p);
        state.glob = true;
        return;
      default:
        throw new ShellSyntaxError(`the policy does not read the word part ${type(p)} (${normalize(this.raw(p))})`);
    }
  }

  /** An unquoted literal: escapes removed; globs and brace expansions noted. */
  private bare(value: string, state: WordState): void {
    for (let i = 0; i < value.length; i++) {
      const c = value[i];
      if (c === '\\') {
        if (value[i + 1] !== '\n' && i + 1 < value.length) state.text += value[i + 1];
        i += 1;
        continue;
      }
      state.text += c;
      if (c === '*' || c === '?' || c === '[') state.glob = true;
      else if (c === '{') state.braceOpen = true;
      else if (state.braceOpen && (c === ',' || (c === '.' && value[i + 1] === '.'))) state.braceSeparated = true;
      else if (c === '}' && state.braceOpen && state.braceSeparated) state.braces = true;
    }
  }

  private expansion(state: WordState, p: ShNode, double: boolean): void {
    state.text += this.raw(p);
    state.literal = false;
    if (!double) state.splits = true;
  }

  /** What a ${...} contains: arithmetic in indexes and slices, words in operators, indirection. */
  private param(p: ShNode, inDouble: boolean): void {
    const raw = this.raw(p);
    if (flag(p, 'Excl') && Number(p.Names ?? 0) === 0 && child(p, 'Index') === null) this.note('indirection', p);
    const index = child(p, 'Index');
    if (index !== null && !(type(index) === 'Word' && ['@', '*'].includes(this.raw(index)))) this.arithm(index, p);
    const slice = child(p, 'Slice');
    if (slice !== null) for (const field of ['Offset', 'Length']) if (child(slice, field) !== null) this.arithm(child(slice, field)!, p);
    const words = [child(child(p, 'Repl'), 'Orig'), child(child(p, 'Repl'), 'With'), child(child(p, 'Exp'), 'Word')];
    if (child(p, 'Exp') !== null && /@[A-Za-z]\}$/.test(raw)) this.note('transformation', p);
    for (const w of words) {
      if (w === null) continue;
      const state = newState();
      for (const part of children(w, 'Parts')) this.part(part, state, { double: false, expansionInDouble: inDouble });
    }
  }

  /** Arithmetic: numbers only are harmless; names and expansions are evaluated by bash as expressions. */
  private arithm(x: ShNode, owner: ShNode): ShellWord {
    this.note('arithmetic', owner);
    switch (type(x)) {
      case 'BinaryArithm':
        this.arithm(child(x, 'X')!, owner);
        this.arithm(child(x, 'Y')!, owner);
        break;
      case 'UnaryArithm':
      case 'ParenArithm':
        this.arithm(child(x, 'X')!, owner);
        break;
      case 'Word': {
        const word = this.word(x);
        if (word.value === null || !NUMBER.test(word.value)) this.note('dynamicArithmetic', owner);
        if (word.value !== null && /[$`]/.test(word.value)) this.note('codeInArithmetic', owner);
        break;
      }
      default:
        throw new ShellSyntaxError(`the policy does not read the arithmetic ${type(x)} (${normalize(this.raw(x))})`);
    }
    return { ...literalWord(normalize(this.raw(x))), value: null };
  }

  /** A [[ ... ]] expression: its words are read; arithmetic comparisons and -v are evaluated by bash. */
  private test(x: ShNode | null, owner: ShNode): void {
    if (x === null) return;
    switch (type(x)) {
      case 'BinaryTest': {
        const op = this.slice(child(x, 'X')!.End().Offset(), child(x, 'Y')!.Pos().Offset()).trim();
        if (ARITHMETIC_TESTS.has(op)) {
          this.arithm(child(x, 'X')!, owner);
          this.arithm(child(x, 'Y')!, owner);
          return;
        }
        this.test(child(x, 'X'), owner);
        this.test(child(x, 'Y'), owner);
        return;
      }
      case 'UnaryTest': {
        const op = this.slice(x.Pos().Offset(), child(x, 'X')!.Pos().Offset()).trim();
        if (op === '-v' || op === '-R') this.note('dynamicArithmetic', owner);
        this.test(child(x, 'X'), owner);
        return;
      }
      case 'ParenTest':
        this.test(child(x, 'X'), owner);
        return;
      case 'Word':
        this.word(x);
        return;
      default:
        throw new ShellSyntaxError(`the policy does not read the test ${type(x)} (${normalize(this.raw(x))})`);
    }
  }

  private note(construct: Construct, n: ShNode): void {
    if (!this.script.constructs.has(construct)) this.script.constructs.set(construct, normalize(this.raw(n)));
  }

  private raw(n: ShNode): string {
    return this.slice(n.Pos().Offset(), n.End().Offset());
  }

  /** Source text between two byte offsets (the parser counts bytes of UTF-8). */
  private slice(from: number, to: number): string {
    return this.bytes.subarray(from, to).toString('utf8');
  }
}

const newState = (): WordState => ({ text: '', literal: true, splits: false, glob: false, braceOpen: false, braceSeparated: false, braces: false });

/** A word made by the policy itself (a program name cut from its path, a keyword). */
export const literalWord = (value: string): ShellWord => ({ raw: value, text: value, value, splits: false, glob: false, braces: false });

const type = (n: ShNode): string => sh().NodeType(n);
const child = (n: ShNode | null, field: string): ShNode | null => (n === null ? null : ((n[field] as ShNode | null | undefined) ?? null));
const children = (n: ShNode, field: string): ShNode[] => (n[field] as ShNode[] | null | undefined) ?? [];
const text = (n: ShNode | null, field: string): string => String(n?.[field] ?? '');
const flag = (n: ShNode, field: string): boolean => n[field] === true;

/** The value of bash's `$'...'`: backslash escapes decoded as bash does. */
export function decodeAnsiC(value: string): string {
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  return value.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs, (whole, esc: string) => {
    if (esc in simple) return simple[esc];
    if (/^[xuU]/.test(esc)) return String.fromCodePoint(parseInt(esc.slice(1), 16));
    if (/^[0-7]/.test(esc)) return String.fromCharCode(parseInt(esc, 8) & 0xff);
    if (esc.startsWith('c') && esc.length === 2) return String.fromCharCode(esc.charCodeAt(1) & 0x1f);
    return whole;
  });
}

/** `word` as one word of a POSIX shell command line: as it is when nothing in it is special, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
