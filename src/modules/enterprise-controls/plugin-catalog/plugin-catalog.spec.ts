import { defaultSettings, EnterpriseSettings } from '../domain/settings';
import { pluginCatalogView, StoredCatalog } from './plugin-catalog';

const SHA = 'b'.repeat(40);
const COMPUTER = '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10';

function settings(change: Partial<EnterpriseSettings>): EnterpriseSettings {
  return { ...defaultSettings(), ...change };
}

const stored = (marketplace: string, url: string, fields: Partial<StoredCatalog> = {}): StoredCatalog => ({
  marketplace,
  url,
  computerId: COMPUTER,
  commitSha: SHA,
  plugins: [{ name: 'review', version: '1.0.0' }, { name: 'lint' }],
  error: null,
  reportedAt: new Date('2026-11-29T08:00:00.000Z'),
  ...fields,
});

describe('pluginCatalogView', () => {
  it('marks each reported plugin as enabledPlugins has it, and lists the enabled plugins no catalog lists', () => {
    const view = pluginCatalogView(
      settings({
        extraKnownMarketplaces: {
          team: { source: 'github', repo: 'acme/tools', ref: 'main' },
          later: { source: 'git', repo: 'https://git.example.com/p.git' },
        },
        enabledPlugins: { 'review@team': true, 'lint@team': false, 'ghost@team': true, 'x@later': true, 'y@unknown': true },
      }),
      [stored('team', 'https://github.com/acme/tools.git')],
    );
    expect(view.marketplaces).toEqual([
      {
        name: 'team',
        source: 'github',
        repo: 'acme/tools',
        ref: 'main',
        allowed: true,
        catalog: {
          outcome: 'read',
          commit: SHA,
          error: null,
          plugins: [
            { name: 'review', version: '1.0.0', enabled: true },
            { name: 'lint', enabled: false },
          ],
          reportedAt: '2026-11-29T08:00:00.000Z',
          computerId: COMPUTER,
        },
      },
      { name: 'later', source: 'git', repo: 'https://git.example.com/p.git', allowed: true, catalog: null },
    ]);
    expect(view.unlistedEnabledPlugins).toEqual(['ghost@team', 'x@later', 'y@unknown']);
  });

  it('shows no catalog of an address the marketplace no longer has, and a failed one with its error', () => {
    const known = settings({ extraKnownMarketplaces: { team: { source: 'github', repo: 'acme/moved' }, broken: { source: 'github', repo: 'acme/broken' } } });
    const view = pluginCatalogView(known, [
      stored('team', 'https://github.com/acme/tools.git'),
      stored('broken', 'https://github.com/acme/broken.git', { commitSha: null, plugins: [], error: 'git fetch failed: denied' }),
    ]);
    expect(view.marketplaces.map((entry) => entry.catalog?.outcome ?? null)).toEqual([null, 'failed']);
    expect(view.marketplaces[1].catalog).toMatchObject({ commit: null, error: 'git fetch failed: denied', plugins: [] });
  });

  it('says which marketplaces strictKnownMarketplaces lets agents use, by the rule agents apply', () => {
    const view = pluginCatalogView(
      settings({
        extraKnownMarketplaces: { team: { source: 'github', repo: 'Acme/Tools.git' }, other: { source: 'github', repo: 'acme/other' } },
        strictKnownMarketplaces: [{ source: 'github', repo: 'acme/tools', ref: 'main', sha: SHA }],
      }),
      [],
    );
    expect(view.marketplaces.map((entry) => [entry.name, entry.allowed])).toEqual([
      ['team', true],
      ['other', false],
    ]);
  });
});
