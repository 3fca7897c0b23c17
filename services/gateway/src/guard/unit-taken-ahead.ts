import type { IncomingMessage } from 'node:http';
import type { QuotaDecision } from '../quota/quota-limiter';

/** Where a request carries the unit the cached-answer path took for it. */
const TAKEN_AHEAD = Symbol('unit taken ahead');

type WithUnit = IncomingMessage & { [TAKEN_AHEAD]?: Promise<QuotaDecision> };

/**
 * Hands a request to Fastify with the unit the cached-answer path already took for it (a decision
 * past the quota, or a quota error): the guard settles that decision instead of taking another,
 * so a request takes one unit whichever path answers it.
 */
export function handUnitOver(raw: IncomingMessage, taken: Promise<QuotaDecision>): void {
  (raw as WithUnit)[TAKEN_AHEAD] = taken;
}

/** The unit taken for this request before Fastify saw it, if one was. */
export function unitTakenAhead(raw: IncomingMessage): Promise<QuotaDecision> | undefined {
  return (raw as WithUnit)[TAKEN_AHEAD];
}
