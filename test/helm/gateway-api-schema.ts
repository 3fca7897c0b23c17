import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject } from 'ajv';

/**
 * Validation of Gateway API resources against the CRD schema vendored in
 * fixtures/gateway-api (README there: origin and version), as kubeconform does with CRD
 * schemas. Stricter than the API server's pruning: an object that declares its properties
 * refuses any other (strict field validation), so a misspelt field fails here too.
 */

type Schema = Record<string, unknown>;

/** Closes every object schema that lists its properties and says nothing of others. */
function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (node === null || typeof node !== 'object') return node;
  const schema = Object.fromEntries(
    Object.entries(node as Schema).map(([key, value]) => [key, closeObjects(value)]),
  );
  if ('properties' in schema && !('additionalProperties' in schema)) {
    schema.additionalProperties = false;
  }
  return schema;
}

const ajv = new Ajv({
  allErrors: true,
  // The CRD's own keywords (x-kubernetes-*, CEL rules) are Kubernetes', not JSON Schema's.
  strict: false,
  formats: { int32: true, int64: true, 'date-time': true },
});

function vendored(file: string): Schema {
  return JSON.parse(
    readFileSync(path.join(__dirname, 'fixtures/gateway-api', file), 'utf8'),
  ) as Schema;
}

const validateHTTPRoute = ajv.compile(closeObjects(vendored('httproute-v1.schema.json')) as Schema);

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`)
    .join('; ');
}

/** An HTTPRoute (gateway.networking.k8s.io/v1), with the kubernetes-models `validate()` shape. */
export class HTTPRoute {
  constructor(private readonly data: unknown) {}

  validate(): void {
    if (!validateHTTPRoute(this.data)) throw new Error(describeErrors(validateHTTPRoute.errors));
  }
}
