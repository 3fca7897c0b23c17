import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { Type } from '@sinclair/typebox';
import type { FastifySchema } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { OpenAPIV3_1 } from 'openapi-types';
import { VALIDATOR_ONLY_KEYWORDS } from './trimmed-fields';

/** The body of every error response (docs/api.md#errors). */
export const ErrorBody = Type.Object(
  { error: Type.String({ description: 'Human-readable message' }) },
  { $id: 'Error', description: 'Error (docs/api.md#errors)' },
);

type Schema = OpenAPIV3_1.SchemaObject;
type RouteSchema = FastifySchema & {
  querystring?: OpenAPIV3_1.NonArraySchemaObject;
  body?: Schema;
  response?: Record<string, Schema>;
};

/**
 * @fastify/swagger names a schema with an `$id` only where it is nested, not where it is the
 * whole body or response; so a named one there is wrapped in a one-member `allOf` first, and
 * `unwrapped` below turns the wrapper, by then a `$ref`, back into the plain `$ref`.
 */
function nested(schema: Schema, description = schema.description): Schema {
  return '$id' in schema ? { description, allOf: [schema] } : schema;
}

/**
 * A route schema as clients should read it, not as the validator does: the validator's own
 * keywords (ajv-keywords' `transform`, the trimming, and `normalize`) are no OpenAPI keywords; a
 * query parameter with a default is optional to the client even though the handler, the default
 * applied, always has it; and an error response is described by its status.
 */
function documented(schema: FastifySchema): FastifySchema {
  // A keyword's value is an array or a string; a property of that name would be a schema.
  const validatorOnly = (key: string, value: unknown) =>
    VALIDATOR_ONLY_KEYWORDS.includes(key) && (typeof value !== 'object' || Array.isArray(value));
  const copy = JSON.parse(
    JSON.stringify(schema, (key, value: unknown) =>
      validatorOnly(key, value) ? undefined : value,
    ),
  ) as RouteSchema;
  const query = copy.querystring;
  if (query?.required && query.properties) {
    const { properties } = query;
    const required = query.required.filter(
      (name) => (properties[name] as Schema | undefined)?.default === undefined,
    );
    if (required.length > 0) query.required = required;
    else delete query.required;
  }
  if (copy.body) copy.body = nested(copy.body);
  for (const [status, response] of Object.entries(copy.response ?? {})) {
    copy.response![status] = nested(
      response,
      Number(status) >= 400 ? STATUS_CODES[status] : response.description,
    );
  }
  return copy;
}

/** The media types' schemas of every operation: where `nested` wrapped named schemas. */
function* mediaTypes(document: OpenAPIV3_1.Document): Generator<OpenAPIV3_1.MediaTypeObject> {
  for (const item of Object.values(document.paths ?? {})) {
    // @fastify/swagger's path items hold operations only, its bodies and responses no `$ref`.
    for (const operation of Object.values(item ?? {}) as OpenAPIV3_1.OperationObject[]) {
      const body = operation.requestBody as OpenAPIV3_1.RequestBodyObject | undefined;
      const responses = Object.values(operation.responses ?? {}) as OpenAPIV3_1.ResponseObject[];
      for (const { content } of [...(body ? [body] : []), ...responses]) {
        yield* Object.values(content ?? {});
      }
    }
  }
}

/**
 * A route schema's mark for a request body a client may leave out (its route supplies `{}`):
 * @fastify/swagger always says a described body is required, and copies `x-` keys to the
 * operation, where `unwrapped` turns the mark into `requestBody.required: false`.
 */
export const OPTIONAL_BODY = 'x-optional-body';

function unwrapped(document: OpenAPIV3_1.Document): OpenAPIV3_1.Document {
  for (const media of mediaTypes(document)) {
    const schema = media.schema as Schema | undefined;
    const [only, ...others] = schema?.allOf ?? [];
    if (only && '$ref' in only && others.length === 0) media.schema = only;
  }
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item ?? {}) as Record<string, unknown>[]) {
      if (operation[OPTIONAL_BODY] !== true) continue;
      delete operation[OPTIONAL_BODY];
      (operation.requestBody as OpenAPIV3_1.RequestBodyObject).required = false;
    }
  }
  return document;
}

/**
 * The @fastify/swagger options both parts of the public document are generated with (the
 * gateway's routes and the catalog's): OpenAPI 3.1 (its schemas are JSON Schema 2020-12, as
 * TypeBox writes them, and it has `webhooks`); each schema with an `$id` emitted once
 * under `components.schemas` by that name, so that generated clients get named types; route
 * schemas `documented` as above; and `finish` applied to the generated document.
 */
export function openapiOptions(
  frame: Partial<OpenAPIV3_1.Document> = {},
  finish: (document: OpenAPIV3_1.Document) => OpenAPIV3_1.Document = (document) => document,
): FastifyDynamicSwaggerOptions {
  return {
    openapi: { openapi: '3.1.0', ...frame },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transform: ({ schema, url }) => ({ schema: schema && documented(schema), url }),
    transformObject: (document) =>
      'openapiObject' in document
        ? finish(unwrapped(document.openapiObject as OpenAPIV3_1.Document))
        : document.swaggerObject,
  };
}
