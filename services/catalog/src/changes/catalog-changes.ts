import { type ChangeFeed, announcementFailed } from '../../../shared/change-feed/change-feed';
import { type KnownTool, assertValidTools, normalizedRecord } from '../records/tool-validator';
import type { CatalogStore, ChangeSummary } from '../store/catalog-store';

/**
 * What an operator sees after a change: the slugs by outcome, the new catalog version, and
 * `warnings` when the change is stored but something after the commit failed.
 */
export type ChangeReport = ChangeSummary & { warnings?: string[] };

/**
 * The one code path of operator changes (docs/api.md#catalog-changes-and-freshness): the catalog
 * CLI and the admin endpoints both call it. Records are put in NFC (normalizedRecord), then
 * validated by the dataset's rules before anything is written (a batch with any invalid record
 * changes nothing: InvalidToolsError names the record and the field); the store writes the
 * change and its outbox entries atomically; then the new catalog version is announced on the
 * change feed, so every catalog replica serves it at once. An announcement that fails (Redis
 * down, the feed's disk full) leaves a stored change: the report says so in `warnings`, and every
 * replica still serves it within a second by polling the store's version.
 */
export class CatalogChanges {
  constructor(
    private readonly store: CatalogStore,
    private readonly feed: ChangeFeed,
  ) {}

  /** Creates or replaces tools by slug (an import, or one admin PUT). */
  async upsert(records: readonly unknown[]): Promise<ChangeReport> {
    const normalized = records.map(normalizedRecord);
    assertValidTools(normalized, await this.liveTools());
    return this.announce(await this.store.upsert(normalized));
  }

  /** Deletes one tool; null when no live tool has this slug. */
  async delete(slug: string): Promise<ChangeReport | null> {
    const summary = await this.store.delete(slug);
    return summary && this.announce(summary);
  }

  /** Slugs and names of the stored tools: a new record may not take another tool's name. */
  private async liveTools(): Promise<KnownTool[]> {
    const tools: KnownTool[] = [];
    for await (const { slug, name } of this.store.exportTools()) tools.push({ slug, name });
    return tools;
  }

  private async announce(summary: ChangeSummary): Promise<ChangeReport> {
    if (summary.created.length + summary.updated.length + summary.deleted.length === 0) {
      return summary;
    }
    try {
      await this.feed.publish('catalog', String(summary.version));
      return summary;
    } catch (err) {
      const warning = announcementFailed(
        err,
        'every catalog replica serves it within a second from the store',
      );
      return { ...summary, warnings: [warning] };
    }
  }
}
