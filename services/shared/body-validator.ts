import AjvCompiler from '@fastify/ajv-compiler';
import { AJV_PLUGINS } from './trimmed-fields';

/**
 * The validator of JSON request bodies: Fastify's own with one change, no type coercion. Query
 * strings need coercion (every value arrives as text), but a JSON body says its types: a number
 * is not a name, and `"events": "tool.created"` is not a list. A route takes it as its
 * `validatorCompiler`; anything else can compile a schema with it the same way.
 */
export const jsonBodyValidator = AjvCompiler()(
  {},
  { customOptions: { coerceTypes: false }, plugins: AJV_PLUGINS },
);
