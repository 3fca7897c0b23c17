import type { TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import fastJson from 'fast-json-stringify';
import type { Tier } from '../../../shared/tiers';
import { FreeToolFields } from './tool';

/**
 * Compiles one serializer per tier from the tier's response schema and returns a function that
 * puts the caller's on the reply. A Free response is written by the Free schema's serializer,
 * which only knows the basic fields and `updatedAt`: a paid field cannot leak even if a record
 * carries it.
 */
export function tierSerializer(schemas: { free: TSchema; paid: TSchema }) {
  const free = fastJson(schemas.free);
  const paid = fastJson(schemas.paid);
  return (reply: FastifyReply, tier: Tier): FastifyReply =>
    reply.type('application/json; charset=utf-8').serializer(tier === 'free' ? free : paid);
}

const FREE_FIELDS: ReadonlySet<string> = new Set(Object.keys(FreeToolFields));

/** Whether a tier sees a field of the record: Free keys the basic ones, paid keys all. */
export function tierSees(tier: Tier, field: string): boolean {
  return tier !== 'free' || FREE_FIELDS.has(field);
}
