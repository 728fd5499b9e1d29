import { marketplaceRule, marketplaceUrl } from './marketplaces';
import { PLUGIN_CATALOG_LIMITS } from '../../contract/marketplaces';
import { catalogPlugins, expandCommand, frontmatter, PluginCommand } from './plugins';

const command = (name: string, prompt: string): PluginCommand => ({ plugin: 'review', name, description: '', prompt });

describe('expandCommand', () => {
  const commands = [command('review', 'Review $1, focusing on $ARGUMENTS.'), command('summarize', 'Summarize the changes.')];

  it('stands a message /name args for the prompt, $ARGUMENTS the args and $1..$9 their words', () => {
    expect(expandCommand('/review src/a.ts speed', commands)).toBe('Review src/a.ts, focusing on src/a.ts speed.');
    expect(expandCommand('/review:review src/a.ts', commands)).toBe('Review src/a.ts, focusing on src/a.ts.');
    expect(expandCommand('  /summarize  ', commands)).toBe('Summarize the changes.');
  });

  it('gives a prompt that uses no arguments the args after it', () => {
    expect(expandCommand('/summarize since v2', commands)).toBe('Summarize the changes.\n\nARGUMENTS: since v2');
  });

  it('leaves other messages alone: no command of that name, or not at the start', () => {
    expect(expandCommand('/deploy now', commands)).toBeNull();
    expect(expandCommand('please /review a.ts', commands)).toBeNull();
    expect(expandCommand('/other:review a.ts', commands)).toBeNull();
  });
});

describe('frontmatter', () => {
  it('reads YAML front matter and the body after it', () => {
    expect(frontmatter('---\nname: changelog\ndescription: "Writes: entries"\n---\n# Body\n')).toEqual({
      attributes: { name: 'changelog', description: 'Writes: entries' },
      body: '# Body\n',
    });
    expect(frontmatter('# No front matter\n')).toEqual({ attributes: {}, body: '# No front matter\n' });
  });
});

describe('marketplaceRule', () => {
  const known = { source: 'github' as const, repo: 'acme/tools', ref: 'stable' };
  const sha = 'a'.repeat(40);

  it('takes any known marketplace at its ref while strictKnownMarketplaces is empty', () => {
    expect(marketplaceRule('acme', known, [])).toEqual({ ref: 'stable' });
  });

  it('under strictKnownMarketplaces, takes only one it names, however spelled, at its pinned commit', () => {
    expect(marketplaceRule('acme', known, [{ source: 'github', repo: 'Acme/Tools.git', ref: 'main', sha }])).toEqual({ ref: 'main', sha });
    expect(marketplaceRule('acme', known, [{ source: 'gitlab', repo: 'acme/tools', ref: 'main', sha }])).toEqual({
      refusal: `marketplace "acme" (github acme/tools) is not among the organization's strictKnownMarketplaces, so none of its plugins load`,
    });
    expect(marketplaceRule('acme', known, [{ source: 'github', repo: 'acme/tools-fork', ref: 'main', sha }])).toHaveProperty('refusal');
  });

  it('fetches from the code host over HTTPS, or from the git address itself', () => {
    expect(marketplaceUrl({ source: 'github', repo: 'acme/tools' })).toBe('https://github.com/acme/tools.git');
    expect(marketplaceUrl({ source: 'gitlab', repo: 'acme/tools.git/' })).toBe('https://gitlab.com/acme/tools.git');
    expect(marketplaceUrl({ source: 'bitbucket', repo: 'acme/tools' })).toBe('https://bitbucket.org/acme/tools.git');
    expect(marketplaceUrl({ source: 'git', repo: 'ssh://git@git.example.com/tools.git' })).toBe('ssh://git@git.example.com/tools.git');
  });
});

describe('catalogPlugins', () => {
  it("reports each plugin of the manifest with the fields it gives, the author by name, in the manifest's order", () => {
    const manifest = {
      plugins: [
        {
          name: 'review',
          source: './plugins/review',
          description: 'Reviews code.',
          version: '1.2.0',
          author: { name: 'Platform team', email: 'p@example.com' },
          category: 'quality',
          tags: ['x'],
        },
        { name: 'deploy', source: { source: 'github', repo: 'acme/deploy' }, author: 'Ops' },
      ],
    };
    expect(catalogPlugins(manifest)).toEqual([
      { name: 'review', description: 'Reviews code.', version: '1.2.0', author: 'Platform team', category: 'quality' },
      { name: 'deploy', author: 'Ops' },
    ]);
  });

  it('makes each field one line of at most its limit, well-formed, and leaves out what is blank or not text', () => {
    const [plugin] = catalogPlugins({
      plugins: [{ name: ' lint ', description: `Line one.\n\tLine two.${'x'.repeat(2000)}`, version: 2, author: { name: '  ' }, category: 'bad \ud800 half' }],
    });
    expect(plugin.name).toBe('lint');
    expect(plugin.description).toMatch(/^Line one\. Line two\.x+…$/);
    expect([...plugin.description!]).toHaveLength(PLUGIN_CATALOG_LIMITS.description);
    expect(plugin).not.toHaveProperty('version');
    expect(plugin).not.toHaveProperty('author');
    expect(plugin.category).toBe('bad \ufffd half');
  });

  it('leaves out entries without a name, or with one too long to be enabled by, and keeps the first plugins up to the limit', () => {
    const long = 'n'.repeat(PLUGIN_CATALOG_LIMITS.name + 1);
    expect(catalogPlugins({ plugins: [{ source: './a' }, { name: '' }, { name: long }, 'text', null, { name: 'kept' }] })).toEqual([{ name: 'kept' }]);
    const many = { plugins: Array.from({ length: PLUGIN_CATALOG_LIMITS.plugins + 5 }, (_, i) => ({ name: `p${i}` })) };
    const kept = catalogPlugins(many);
    expect(kept).toHaveLength(PLUGIN_CATALOG_LIMITS.plugins);
    expect(kept.at(-1)).toEqual({ name: `p${PLUGIN_CATALOG_LIMITS.plugins - 1}` });
    expect(catalogPlugins({ plugins: 'none' })).toEqual([]);
  });
});
