import { formatInstant } from '../records/date-time';
import type { Tool, ToolRecord } from '../schemas/tool';
import type { PlannedChange, ToolChange } from './catalog-store';

/**
 * The change clock of a store (docs/api.md, "Syncing the catalog"): every change gets an
 * instant, the server's time when its write commits, moved on to a millisecond after the
 * store's previous instant where that is not later. Instants are handed out inside the write's
 * transaction, while no other write can commit, so a change committed later always has a later
 * instant: a client that has seen every change up to an instant misses none after it. No two
 * changes share an instant, so sorting by `updatedAt` never ties; the price is that a write of
 * n changes spans n milliseconds, so right after a large import instants run ahead of the
 * wall clock by up to n milliseconds (the outbox and webhooks keep the write's wall time).
 */
export class ChangeClock {
  private last: number;

  /** `last`: the store's latest instant (null before the first change); `now`: the write's time. */
  constructor(
    last: string | null,
    private readonly now: number = Date.now(),
  ) {
    this.last = last === null ? Number.NEGATIVE_INFINITY : Date.parse(last);
  }

  /** The write's time on the wall clock (the outbox's `at`). */
  get time(): string {
    return formatInstant(this.now);
  }

  /** The next change's instant. */
  next(): string {
    this.last = Math.max(this.now, this.last + 1);
    return formatInstant(this.last);
  }
}

/** A tool's content as operators write it: any `updatedAt` it carries is not the server's. */
export function toolContent(tool: ToolRecord & { updatedAt?: unknown }): ToolRecord {
  if (!('updatedAt' in tool)) return tool;
  const content = { ...tool };
  delete content.updatedAt;
  return content;
}

/** The record a change stores and serves: its content, changed at `at`. */
export function stamped(tool: ToolRecord, at: string): Tool {
  return { ...toolContent(tool), updatedAt: at };
}

/** A planned change with its instant: its tool carries it as `updatedAt`. */
export function stampChange(change: PlannedChange, at: string): ToolChange {
  return change.type === 'tool.deleted' ? change : { ...change, tool: stamped(change.tool, at) };
}
