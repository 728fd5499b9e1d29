/** A file's extension (lower case, without the dot; `(none)` without one) and language (`Other` when unknown). */
export interface FileKind {
  extension: string;
  language: string;
}

type LanguageEntry = { type?: string; extensions?: string[]; filenames?: string[] };

/**
 * Where Linguist itself would need its content heuristics, the well-known language wins: Linguist's
 * own "popular" list (lib/linguist/popular.yml), plus the everyday data, markup and prose formats.
 */
// Not XML: it also claims .tsx, .csproj-like and dozens of other extensions that belong to their own languages.
const WELL_KNOWN = new Set([
  // popular.yml
  'C',
  'C#',
  'C++',
  'CoffeeScript',
  'CSS',
  'Dart',
  'DM',
  'Elixir',
  'Go',
  'Groovy',
  'HTML',
  'Java',
  'JavaScript',
  'Kotlin',
  'Objective-C',
  'Perl',
  'PHP',
  'PowerShell',
  'Python',
  'Ruby',
  'Rust',
  'Scala',
  'Shell',
  'Swift',
  'TypeScript',
  // everyday formats
  'JSON',
  'Markdown',
  'SQL',
  'Text',
  'TOML',
  'YAML',
]);

/**
 * Extension and file name tables from GitHub Linguist's language list (`linguist-languages`).
 * An extension several languages claim goes to a well-known language (above), then to the one that
 * lists it first (its primary extension), then to a programming language over data or markup, then
 * alphabetically: `.ts` is TypeScript, `.h` is C, `.md` is Markdown, `.rs` is Rust.
 */
function buildTables(): { byExtension: Map<string, string>; byFilename: Map<string, string> } {
  // Loaded on first use: its 800-odd modules take a quarter of a second, which start-up need not pay.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const linguist = require('linguist-languages') as Record<string, LanguageEntry>;
  const candidates = new Map<string, Array<{ name: string; rank: number }>>();
  const byFilename = new Map<string, string>();
  const entries = Object.entries(linguist).sort(([a], [b]) => a.localeCompare(b));
  for (const [name, language] of entries) {
    (language.extensions ?? []).forEach((ext, i) => {
      const key = ext.toLowerCase();
      const rank = (WELL_KNOWN.has(name) ? 0 : 4) + (i === 0 ? 0 : 2) + (language.type === 'programming' ? 0 : 1);
      candidates.set(key, [...(candidates.get(key) ?? []), { name, rank }]);
    });
    for (const file of language.filenames ?? []) if (!byFilename.has(file) || WELL_KNOWN.has(name)) byFilename.set(file, name);
  }
  const byExtension = new Map<string, string>();
  for (const [ext, list] of candidates) byExtension.set(ext, list.reduce((best, c) => (c.rank < best.rank ? c : best)).name);
  return { byExtension, byFilename };
}

let tables: ReturnType<typeof buildTables> | undefined;

export function fileKind(path: string): FileKind {
  tables ??= buildTables();
  const base = path.replace(/\\/g, '/').split('/').pop() ?? '';
  const dot = base.lastIndexOf('.');
  const extension = dot > 0 && dot < base.length - 1 ? base.slice(dot + 1).toLowerCase() : '';
  const language = tables.byFilename.get(base) ?? (extension ? tables.byExtension.get(`.${extension}`) : undefined) ?? 'Other';
  return { extension: extension || '(none)', language };
}
