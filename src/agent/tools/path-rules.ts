import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import picomatch from 'picomatch';
import type { ToolPolicy } from './tool';

type Filesystem = NonNullable<ToolPolicy['sandbox']>['filesystem'];

/**
 * The organization's `sandbox.filesystem` paths as the agent's own file tools obey them, read as the
 * sandbox reads them: absolute, `~/...` (the agent's home) or relative to the workspace, literal paths
 * covering everything beneath them, and git-style globs (`**\/.env`). `allowRead` re-opens a region of
 * `denyRead` unless the deny is the more specific of the two; `denyWrite` always wins. What a tool may
 * not read it does not write either.
 */
export class PathRules {
  private readonly denyRead: Rule[];
  private readonly allowRead: Rule[];
  private readonly denyWrite: Rule[];

  constructor(filesystem: Partial<Filesystem> | undefined, workspaceRoot: string, home = homedir()) {
    const rules = (patterns: string[] | undefined) => (patterns ?? []).flatMap((pattern) => compile(pattern, workspaceRoot, home));
    this.denyRead = rules(filesystem?.denyRead);
    this.allowRead = rules(filesystem?.allowRead);
    this.denyWrite = rules(filesystem?.denyWrite);
  }

  get empty(): boolean {
    return this.denyRead.length === 0 && this.denyWrite.length === 0;
  }

  /** The setting that keeps the tools from reading `absolute` (a real path), or null. */
  readDenial(absolute: string): string | null {
    const denied = deepestCover(this.denyRead, absolute);
    return denied > deepestCover(this.allowRead, absolute) ? 'sandbox.filesystem.denyRead' : null;
  }

  /** The setting that keeps the tools from writing `absolute` (a real path), or null. */
  writeDenial(absolute: string): string | null {
    if (deepestCover(this.denyWrite, absolute) > 0) return 'sandbox.filesystem.denyWrite';
    return this.readDenial(absolute);
  }
}

interface Rule {
  matches: (path: string) => boolean;
}

/**
 * How deep the deepest path covered by one of the rules is, among `absolute` and its parents (0: none):
 * a rule naming a folder covers all beneath it, so the one naming the longer path is the more specific.
 */
function deepestCover(rules: Rule[], absolute: string): number {
  if (rules.length === 0) return 0;
  for (let path = absolute, depth = absolute.split(sep).length; ; path = dirname(path), depth--) {
    if (rules.some((rule) => rule.matches(path))) return depth;
    if (dirname(path) === path) return 0;
  }
}

/** One pattern as rules over absolute paths: as given, and through the real path of its literal part when that differs. */
function compile(pattern: string, workspaceRoot: string, home: string): Rule[] {
  const expanded = pattern === '~' ? home : pattern.startsWith('~/') ? join(home, pattern.slice(2)) : pattern;
  // A trailing `/**` names the folder and all beneath it, as a literal folder does.
  const absolute = resolve(isAbsolute(expanded) ? expanded : join(workspaceRoot, expanded)).replace(/\/\*\*$/, '');
  const spellings = new Set([absolute]);
  const literal = literalPrefix(absolute);
  try {
    spellings.add(join(realpathSync(literal), absolute.slice(literal.length)));
  } catch {
    // Not there (yet): it can only be reached as written.
  }
  return [...spellings].map((spelling) => {
    if (!picomatch.scan(spelling).isGlob) return { matches: (path: string) => path === spelling };
    const glob = picomatch(spelling, { dot: true });
    return { matches: (path: string) => glob(path) };
  });
}

/** The part of an absolute pattern before its first path component holding a glob character. */
function literalPrefix(absolute: string): string {
  const parts = absolute.split(sep);
  const firstGlob = parts.findIndex((part) => picomatch.scan(part).isGlob);
  return firstGlob === -1 ? absolute : parts.slice(0, firstGlob).join(sep) || sep;
}
