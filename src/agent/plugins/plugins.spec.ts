import { marketplaceRule, marketplaceUrl } from './marketplaces';
import { expandCommand, frontmatter, PluginCommand } from './plugins';

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
