import { type Static, Type } from '@sinclair/typebox';
import type { AnyValidateFunction } from 'ajv/dist/core';
import type { FastifySchemaValidationError } from 'fastify/types/schema';
import { jsonBodyValidator } from '../../../shared/body-validator';
import { humanText } from '../../../shared/trimmed-fields';
import { validationMessage } from '../../../shared/validation-message';

/**
 * Who a key is for: the one rule for a key request, whether it comes as the body of
 * `POST /v1/register` or as the options of `tool-directory keys create`.
 */
export const KeyRequestBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    name: humanText({
      minLength: 1,
      maxLength: 100,
      description: 'Your name',
      lines: 'one',
      trimmed: true,
    }),
    useCase: Type.Optional(humanText({ maxLength: 1000, lines: 'several' })),
  },
  { $id: 'RegistrationRequest', description: 'Who the key is for' },
);
export type KeyRequestBody = Static<typeof KeyRequestBody>;

/** Registration's validator, compiled on first use: only the keys CLI calls checkKeyRequest. */
let validator: AnyValidateFunction | undefined;

/**
 * Checks a key request that comes without HTTP (the keys CLI) as registration checks its body:
 * Fastify's Ajv with the API's plugins and, as for a JSON body, no type coercion. Returns the
 * request, trimmed and in NFC, or the message the API's 400 carries for the same input ("Invalid field
 * 'email': must be an email address of at most 254 characters").
 */
export function checkKeyRequest(
  request: Record<string, unknown>,
): { ok: true; request: KeyRequestBody } | { ok: false; error: string } {
  validator ??= jsonBodyValidator({ schema: KeyRequestBody, httpPart: 'body' });
  // As in a JSON body, a field is there or not: an option not given is left out.
  const checked = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== undefined));
  if (validator(checked)) return { ok: true, request: checked as KeyRequestBody };
  const errors = (validator.errors ?? []) as FastifySchemaValidationError[];
  return { ok: false, error: validationMessage(errors, 'body', { body: KeyRequestBody }) };
}
