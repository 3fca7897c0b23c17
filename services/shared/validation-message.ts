import type { FastifySchemaValidationError } from 'fastify/types/schema';
import { TEXT_PATTERN_WORDS } from './trimmed-fields';

type JsonSchema = {
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  format?: string;
  pattern?: string;
  transform?: string[];
  const?: unknown;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  minItems?: number;
  uniqueItems?: boolean;
};

const CONTEXT_LABELS: Record<string, string> = {
  querystring: 'query parameter',
  params: 'path parameter',
  body: 'field',
  headers: 'header',
  arguments: 'argument',
};

/** The values an enum or a union of constants allows, if the schema is one. */
function choicesOf(schema: JsonSchema): unknown[] | undefined {
  const choices = schema.enum ?? schema.anyOf?.map((s) => s.const);
  return choices?.every((c) => c !== undefined) ? choices : undefined;
}

/** Describes, in words, what a parameter's schema allows: "an integer from 1 to 100". */
export function describeAllowed(schema: JsonSchema | undefined): string {
  if (!schema) return 'a valid value';
  const choices = choicesOf(schema);
  if (choices) return `one of ${choices.join(', ')}`;
  if (schema.type === 'integer' || schema.type === 'number') {
    const noun = schema.type === 'integer' ? 'an integer' : 'a number';
    if (schema.minimum !== undefined && schema.maximum !== undefined) {
      return `${noun} from ${schema.minimum} to ${schema.maximum}`;
    }
    if (schema.minimum !== undefined) return `${noun} of at least ${schema.minimum}`;
    return noun;
  }
  if (schema.type === 'string') {
    if (schema.format === 'date-time') {
      return 'an ISO 8601 date-time with a time zone (RFC 3339), e.g. 2025-06-30T12:00:00Z';
    }
    const noun = schema.format === 'email' ? 'an email address' : 'a string';
    const { minLength: min, maxLength: max } = schema;
    const trimmed = schema.transform?.includes('trim') ? ' after trimming' : '';
    const words = schema.pattern === undefined ? undefined : TEXT_PATTERN_WORDS[schema.pattern];
    const text = words === undefined ? '' : `, ${words}`;
    if (min !== undefined && max !== undefined)
      return `${noun} of ${min} to ${max} characters${trimmed}${text}`;
    if (max !== undefined) return `${noun} of at most ${max} characters${text}`;
    if (min !== undefined) return `${noun} of at least ${min} characters${text}`;
    return `${noun}${text}`;
  }
  if (schema.type === 'array') {
    const items = schema.items && choicesOf(schema.items);
    if (!items) return 'a list';
    const list = schema.minItems ? 'a non-empty list' : 'a list';
    return `${list} of ${schema.uniqueItems ? 'distinct ' : ''}values from ${items.join(', ')}`;
  }
  if (schema.type === 'object') return 'a JSON object';
  return 'a valid value';
}

/**
 * Turns the first schema violation into a message naming the parameter and its allowed range,
 * as docs/api.md#parameters-and-validation asks ("Invalid query parameter 'limit': must be an
 * integer from 1 to 100").
 */
export function validationMessage(
  errors: FastifySchemaValidationError[],
  context: string | undefined,
  routeSchema: Record<string, unknown> | undefined,
): string {
  const first = errors[0];
  const label = CONTEXT_LABELS[context ?? ''] ?? 'parameter';
  if (!first) return `Invalid ${label}`;
  const params = first.params as
    { missingProperty?: string; additionalProperty?: string } | undefined;
  if (params?.additionalProperty !== undefined) {
    return `Unknown ${label} '${params.additionalProperty}'`;
  }
  const name = params?.missingProperty ?? first.instancePath.split('/').filter(Boolean).join('.');
  if (!name)
    return `Invalid request ${context === 'body' ? 'body' : label}: ${first.message ?? ''}`;
  const topLevel = name.split('.')[0] ?? name;
  const section = routeSchema?.[context ?? ''] as JsonSchema | undefined;
  const allowed = describeAllowed(section?.properties?.[topLevel]);
  if (params?.missingProperty) return `Missing required ${label} '${name}': must be ${allowed}`;
  return `Invalid ${label} '${name}': must be ${allowed}`;
}
