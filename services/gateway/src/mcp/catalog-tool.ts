import {
  type JsonSchemaValidatorResult,
  type StandardSchemaWithJSON,
  fromJsonSchema,
  type jsonSchemaValidator,
} from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import { tieredResponse } from '../../../catalog/src/schemas/api';
import { type CatalogRoute, catalogRoute } from '../../../shared/contract';
import { TIER_LABELS, TIERS, type Tier, tierAtLeast } from '../../../shared/tiers';
import AjvCompiler from '@fastify/ajv-compiler';
import { AJV_PLUGINS, VALIDATOR_ONLY_KEYWORDS } from '../../../shared/trimmed-fields';
import { validationMessage } from '../../../shared/validation-message';

/** A schema of the endpoint as the SDK takes it: the JSON Schema, its validator compiled once. */
export type McpSchema = StandardSchemaWithJSON<Record<string, unknown>, Record<string, unknown>>;

/**
 * The check of tools' answers: the SDK's own Ajv. Each schema is compiled once, when its tool's
 * module loads, and the SDK runs the compiled check on each call.
 */
const ANSWER_VALIDATOR = new AjvJsonSchemaValidator();

/**
 * Fastify's validator as JSON bodies take it (no type coercion), but taking arguments as they
 * come: none added from defaults (the catalog applies its own), none removed (an argument the
 * tool does not declare is refused, as its schema says).
 */
const argumentsCompiler = AjvCompiler()(
  {},
  {
    customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false },
    plugins: AJV_PLUGINS,
  },
);

/**
 * The check of tools' arguments, refusing a bad one with the message a bad parameter of REST gets
 * ("Invalid argument 'limit': must be an integer from 1 to 50"): one rule in one place.
 * Compiled once, as the answers' checks are.
 */
const ARGUMENTS_VALIDATOR: jsonSchemaValidator = {
  getValidator<T>(schema: Record<string, unknown>) {
    const check = argumentsCompiler({ schema, method: 'POST', url: '', httpPart: 'body' }) as {
      (value: unknown): boolean;
      errors?: Parameters<typeof validationMessage>[0] | null;
    };
    return (value: unknown): JsonSchemaValidatorResult<T> =>
      check(value)
        ? { valid: true, data: value as T, errorMessage: undefined }
        : {
            valid: false,
            data: undefined,
            errorMessage: validationMessage(check.errors ?? [], 'arguments', { arguments: schema }),
          };
  },
};

/** A JSON Schema as the SDK takes it, compiled now with `validator`. */
function compiled(schema: Record<string, unknown>, validator: jsonSchemaValidator): McpSchema {
  return fromJsonSchema<Record<string, unknown>>(schema as never, validator);
}

/** A catalog answer's JSON body: the API's envelope (docs/api.md#response-bodies). */
export interface CatalogAnswerBody {
  data: unknown;
  meta: Record<string, unknown>;
}

/**
 * An MCP tool: a read of one catalog route, its arguments that route's parameters. Each tool is
 * one file of `tools/`, and that file is the only place its name is written.
 */
export interface CatalogTool {
  name: string;
  title: string;
  /** What it does, for `tools/list`; who may call it is added from the route's tier. */
  description: string;
  /** What it is for, as the server's instructions say it: a phrase after the tool's name. */
  purpose: string;
  /** The route it mirrors: its tier, scope, cache, and the label of its catalog calls. */
  route: CatalogRoute;
  /** Its arguments, checked by the SDK before the tool runs (a tool error otherwise). */
  input: McpSchema;
  /** The shape of its structured content, every tier's answer; checked by the SDK and clients. */
  output: McpSchema;
  /** The catalog path and query asked for these (checked) arguments. */
  path(args: Record<string, unknown>): string;
  /** A short text rendering of the catalog's answer, next to it as structured content. */
  text(body: CatalogAnswerBody, args: Record<string, unknown>): string;
}

/** Who may call a route of this tier, in words. */
export const NEEDED: Record<Tier, string> = {
  free: 'any key',
  pro: 'a Pro or Enterprise key',
  enterprise: 'an Enterprise key',
};

/** The tiers a route is open to, in words ("Pro and Enterprise"); undefined when open to all. */
export function tiersOf(route: CatalogRoute): string | undefined {
  if (route.tier === 'free') return undefined;
  const open = TIERS.filter((tier) => tierAtLeast(tier, route.tier));
  return open.map((tier) => TIER_LABELS[tier]).join(' and ');
}

/** A tool's description as `tools/list` gives it: its own words, then who may call it. */
export function descriptionOf(tool: CatalogTool): string {
  return tool.route.tier === 'free'
    ? tool.description
    : `${tool.description} Needs ${NEEDED[tool.route.tier]}.`;
}

/**
 * The route-table entry a tool mirrors. A tool names a route of the one table, so its tier,
 * scope and cache are the REST route's and cannot drift from them.
 */
export function mirroredRoute(url: string): CatalogRoute {
  const entry = catalogRoute('GET', url);
  if (entry === undefined) throw new Error(`no catalog route GET ${url}`);
  return entry;
}

/** A copy of a schema as plain JSON Schema, without the keywords `drop` names, at any depth. */
function plain(schema: TSchema, drop: readonly string[]): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema), (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).filter(([name]) => !drop.includes(name)))
      : value,
  ) as Record<string, unknown>;
}

/**
 * A REST route's parameters as a tool's arguments, from the schema the catalog validates them
 * with: the same names, bounds, choices and descriptions, so the two cannot drift apart. What
 * only a query string needs is left out (the `allOf` against Ajv's coercion of non-finite
 * numbers, the validator's own keywords such as `transform`: the catalog still trims), and a
 * parameter with a default is optional to the caller. Unknown arguments are refused, as unknown
 * query parameters are.
 */
export function argumentsOf(
  schema: TObject,
  names: readonly string[] = Object.keys(schema.properties),
): McpSchema {
  const properties: Record<string, unknown> = {};
  for (const name of names) {
    properties[name] = plain(schema.properties[name]!, ['allOf', ...VALIDATOR_ONLY_KEYWORDS]);
  }
  const required = (schema.required ?? []).filter(
    (name) => names.includes(name) && schema.properties[name]?.default === undefined,
  );
  return compiled(
    { type: 'object', properties, required, additionalProperties: false },
    ARGUMENTS_VALIDATOR,
  );
}

/** No arguments at all: a tool of a route without parameters. */
export const NO_ARGUMENTS = Type.Object({});

/**
 * A route's answer as a tool's output schema, from the response schema the catalog serializes it
 * with: one envelope, or a tiered route's two (its `data` then either tier's records, its `meta`
 * theirs, which both tiers share). The schemas' `$id`s are left out: they name OpenAPI
 * components, and a client compiling every tool's schema into one validator would meet the same
 * one twice.
 */
export function answerOf(response: TObject | { free: TObject; paid: TObject }): McpSchema {
  let envelope: TObject;
  if ('free' in response) {
    const { free, paid } = response;
    if (JSON.stringify(free.properties.meta) !== JSON.stringify(paid.properties.meta)) {
      throw new Error(`the tiers of ${String(paid.$id)} have different metas`);
    }
    envelope = Type.Object({
      data: Type.Union([paid.properties.data!, free.properties.data!], {
        description: tieredResponse({ free, paid }).description,
      }),
      meta: paid.properties.meta!,
    });
  } else {
    envelope = response;
  }
  return compiled(plain(envelope, ['$id']), ANSWER_VALIDATOR);
}

/** The query string of the arguments given, in the order given. */
export function query(args: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(args)) {
    if (value !== undefined) search.set(name, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

/** An argument as one segment of a path. */
export const segment = (value: unknown): string => encodeURIComponent(String(value));

/**
 * The fields of a tool record every tier gets (docs/api.md#the-tool-record) that a summary names.
 */
export interface ToolSummary {
  name: string;
  slug: string;
  category: string;
  rating: number;
  pricing: string;
  website: string;
  description: string;
}

/**
 * The short text next to a tool's structured content, for a client that shows text only: one
 * line per record, the identifiers an agent passes on (slugs), nothing the structured content
 * lacks. The structured content is the whole answer.
 */
export function toolLine(tool: ToolSummary): string {
  return `- ${tool.name} (${tool.slug}), ${tool.category}, rated ${tool.rating}/5: ${tool.description}`;
}

export function lines(header: string, rows: string[]): string {
  return [header, ...rows].join('\n');
}
