import { followCatalogChanges } from '../../../services/catalog/src/changes/catalog-follower';
import type { CatalogReader } from '../../../services/catalog/src/store/catalog-store';
import { LocalChangeFeed } from '../../../services/shared/change-feed/local-change-feed';
import { tempDataDir } from '../../support/services';

/**
 * Every catalog replica asks its store for the version twice a second: a store that is away
 * fails every one of those rounds, and the log says so once a minute, not twice a second.
 */
describe('a catalog replica following a store that is away', () => {
  test('forty failed refreshes make one warning', async () => {
    const feed = new LocalChangeFeed(tempDataDir());
    let refreshes = 0;
    const store = {
      refresh: async () => {
        refreshes += 1;
        throw new Error('the store cannot be reached');
      },
    } as unknown as CatalogReader;
    const warnings: unknown[][] = [];
    const unfollow = await followCatalogChanges(store, feed, {
      pollMs: 5,
      logger: { warn: (...args: unknown[]) => void warnings.push(args) },
    });
    try {
      while (refreshes < 40) await new Promise((resolve) => setTimeout(resolve, 5));
    } finally {
      unfollow();
      await feed.close();
    }
    expect(warnings).toEqual([
      [
        { err: new Error('the store cannot be reached'), suppressed: 0 },
        'catalog refresh failed; retrying',
      ],
    ]);
  });
});
