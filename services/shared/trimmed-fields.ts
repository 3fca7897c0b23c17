import { Type } from '@sinclair/typebox';
import type { FastifyRequest, preValidationHookHandler } from 'fastify';

export const AFTER_TRIMMING = 'after trimming';

/**
 * A text field whose bounds hold after trimming (SPEC B2 `name`, B5 `q`). The route trims it
 * before validation (`trimFields`), so the schema's bounds are the trimmed ones; the description
 * says so, in OpenAPI and in validation messages.
 */
export function trimmedString(options: {
  minLength: number;
  maxLength: number;
  description: string;
}) {
  const { minLength, maxLength, description } = options;
  return Type.String({
    minLength,
    maxLength,
    description: `${description} (${minLength}–${maxLength} characters ${AFTER_TRIMMING})`,
  });
}

/** preValidation: trims the named string fields of the query or the body, in place. */
export function trimFields(part: 'query' | 'body', ...names: string[]): preValidationHookHandler {
  return function trim(request: FastifyRequest, _reply, done) {
    const fields = request[part] as Record<string, unknown> | null | undefined;
    if (fields && typeof fields === 'object') {
      for (const name of names) {
        const value = fields[name];
        if (typeof value === 'string') fields[name] = value.trim();
      }
    }
    done();
  };
}
