import type { TSchema } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import type { Tier } from '../../shared/tiers';

/**
 * Compiles one serializer per tier from the tier's response schema. A Free response is written
 * by the Free schema's serializer, which only knows the A 2.1 fields: a paid field cannot leak
 * even if a record carries it.
 */
export function tierSerializer(schemas: { free: TSchema; paid: TSchema }) {
  const free = fastJson(schemas.free);
  const paid = fastJson(schemas.paid);
  return (tier: Tier): ((payload: unknown) => string) => (tier === 'free' ? free : paid);
}
