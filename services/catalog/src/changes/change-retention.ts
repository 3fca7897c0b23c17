import type { Logger } from 'pino';
import { pollLoop } from '../../../shared/poll-loop';
import { formatInstant } from '../records/date-time';
import type { CatalogWriter } from '../store/catalog-store';

const DAY_MS = 24 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;

/**
 * Keeps the outbox to CHANGES_RETENTION_DAYS: prunes now and then, a quarter of the retention
 * apart (at most an hour, at least a second). The change log already hides what is past
 * retention; this only frees the space. Every replica prunes: the same entries, whoever is
 * first. Returns a function that stops it.
 */
export function pruneChangesRegularly(
  store: Pick<CatalogWriter, 'pruneChanges'>,
  { retentionDays, logger }: { retentionDays: number; logger: Pick<Logger, 'warn'> },
): () => void {
  const retentionMs = retentionDays * DAY_MS;
  const round = async () => {
    await store.pruneChanges(formatInstant(Date.now() - retentionMs));
  };
  const everyMs = Math.min(HOUR_MS, Math.max(1_000, retentionMs / 4));
  const stop = pollLoop(round, { everyMs, logger, failure: 'pruning the change log failed' });
  round().catch((err: unknown) => logger.warn({ err }, 'pruning the change log failed'));
  return stop;
}
