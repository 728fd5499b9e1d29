/**
 * How the plugin marketplaces of `extraKnownMarketplaces` are reached, and whether `strictKnownMarketplaces` lets one
 * be used: the reference agent fetches marketplaces by this rule, and the server's plugin catalog says by it which ones
 * agents may use. Both import this module, so the two cannot read the lists differently. Also the limits of the
 * catalog an agent reports of a marketplace, which the server's schema enforces and the agent caps its report to.
 */

/** An entry of `extraKnownMarketplaces`. */
export interface KnownMarketplace {
  source: string;
  repo: string;
  ref?: string;
}

/** An entry of `strictKnownMarketplaces`. */
export interface StrictMarketplace {
  source: string;
  repo: string;
  ref: string;
  sha: string;
}

/** The address git fetches a marketplace from: the code host's HTTPS address of `repo`, or `repo` itself for `git`. */
export function marketplaceUrl(marketplace: { source: string; repo: string }): string {
  const repo = marketplace.repo.trim().replace(/\/+$/, '');
  switch (marketplace.source) {
    case 'github':
      return `https://github.com/${repo.replace(/\.git$/, '')}.git`;
    case 'gitlab':
      return `https://gitlab.com/${repo.replace(/\.git$/, '')}.git`;
    case 'bitbucket':
      return `https://bitbucket.org/${repo.replace(/\.git$/, '')}.git`;
    default:
      return repo;
  }
}

/**
 * The commit a known marketplace must be at, or why it may not be used. Without `strictKnownMarketplaces`,
 * any marketplace of `extraKnownMarketplaces`, at its `ref` (else its default branch). With it, only one the
 * list names (the same code host and repository, however the repository is spelled), at the list's `sha`.
 */
export function marketplaceRule(
  name: string,
  known: KnownMarketplace,
  strict: readonly StrictMarketplace[],
): { refusal: string } | { ref?: string; sha?: string } {
  if (strict.length === 0) return known.ref ? { ref: known.ref } : {};
  const pinned = strict.find((entry) => entry.source === known.source && marketplaceUrl(entry).toLowerCase() === marketplaceUrl(known).toLowerCase());
  if (!pinned) {
    return {
      refusal: `marketplace "${name}" (${known.source} ${known.repo}) is not among the organization's strictKnownMarketplaces, so none of its plugins load`,
    };
  }
  return { ref: pinned.ref, sha: pinned.sha };
}

/**
 * The most a marketplace's catalog report holds: plugins (the first of the manifest's list), and characters of each
 * field. At these limits a report of plain text stays well under the server's default body limit (1 MiB).
 */
export const PLUGIN_CATALOG_LIMITS = {
  plugins: 500,
  name: 128,
  description: 1000,
  version: 64,
  author: 128,
  category: 64,
  error: 2000,
} as const;
