import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { OpenAPIV3_1 } from 'openapi-types';

/** The document's base URI for Ajv: schemas are compiled by JSON pointer into it. */
const BASE = 'https://tool-directory.test/openapi.json';

/** What any HTTP answer may carry and no API contract names: framing, compression, CORS. */
const GENERAL_HEADERS =
  /^(content-type|content-length|content-encoding|transfer-encoding|date|connection|keep-alive|vary|access-control-[a-z-]+)$/;

/** One answer as the client got it. */
export interface RecordedAnswer {
  status: number;
  headers: Headers;
  /** As the client parsed it: JSON, or text when read as text; undefined or '' when none. */
  body: unknown;
}

/** One webhook delivery as the receiver got it. */
export interface RecordedDelivery {
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

type Response = OpenAPIV3_1.ResponseObject;
type Header = OpenAPIV3_1.HeaderObject;
type Operation = OpenAPIV3_1.OperationObject;

/** A JSON pointer's segment (RFC 6901). */
const segment = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Checks real answers and webhook deliveries against an OpenAPI 3.1 document with Ajv (JSON
 * Schema 2020-12, as OpenAPI 3.1's schemas are): the status is one the operation documents;
 * each required header is there, each present one the document names has a valid value, and
 * none it does not name is sent beyond HTTP's general ones; the media type is documented and
 * the body valid against its schema, an NDJSON body line by line against `contentSchema`.
 * Each method returns the problems found, as sentences naming the answer.
 */
export class OpenapiConformance {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly operations = new Map<string, { pointer: string; operation: Operation }>();

  constructor(private readonly document: OpenAPIV3_1.Document) {
    addFormats(this.ajv);
    // The document is the schema its pointers resolve in: its own fields are no keywords.
    this.ajv.addVocabulary(Object.keys(document));
    this.ajv.addSchema(document as object, BASE);
    for (const [path, item] of Object.entries(document.paths ?? {})) {
      for (const [method, operation] of Object.entries(item ?? {}) as [string, Operation][]) {
        this.operations.set(operation.operationId!, {
          pointer: `/paths/${segment(path)}/${method}`,
          operation,
        });
      }
    }
  }

  /** Every operation the document describes, by operationId. */
  get operationIds(): string[] {
    return [...this.operations.keys()];
  }

  answer(operationId: string, answer: RecordedAnswer): string[] {
    const where = `${operationId} ${answer.status}`;
    const found = this.operations.get(operationId);
    if (found === undefined) return [`${where}: no such operation`];
    const declared = found.operation.responses?.[String(answer.status)];
    if (declared === undefined) return [`${where}: the status is not documented`];
    const [response, pointer] = this.resolve<Response>(
      declared,
      `${found.pointer}/responses/${answer.status}`,
    );
    return [
      ...this.headers(where, response, pointer, answer.headers),
      ...this.body(where, response, pointer, answer),
    ];
  }

  delivery(delivery: RecordedDelivery): string[] {
    let event: { type?: string };
    try {
      event = JSON.parse(delivery.body) as { type?: string };
    } catch {
      return [`a delivery that is not JSON: ${delivery.body.slice(0, 80)}`];
    }
    const where = `webhook ${event.type}`;
    const item = this.document.webhooks?.[event.type ?? ''] as OpenAPIV3_1.PathItemObject;
    if (item?.post === undefined) return [`${where}: not in the document's webhooks`];
    const problems: string[] = [];
    for (const parameter of (item.post.parameters ?? []) as OpenAPIV3_1.ParameterObject[]) {
      if (parameter.in === 'header' && parameter.required && !delivery.headers[parameter.name]) {
        problems.push(`${where}: header ${parameter.name} missing`);
      }
    }
    const body = item.post.requestBody as OpenAPIV3_1.RequestBodyObject;
    const type = String(delivery.headers['content-type']).split(';')[0]!.trim();
    if (body.content[type] === undefined) problems.push(`${where}: content type ${type}`);
    const pointer = `/webhooks/${segment(event.type!)}/post/requestBody/content/${segment(type)}/schema`;
    return [...problems, ...this.validate(where, pointer, event)];
  }

  private headers(where: string, response: Response, pointer: string, sent: Headers): string[] {
    const problems: string[] = [];
    const declared = new Map<string, [Header, string]>();
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      declared.set(
        name.toLowerCase(),
        this.resolve<Header>(header, `${pointer}/headers/${segment(name)}`),
      );
    }
    for (const [name, [header, at]] of declared) {
      const value = sent.get(name);
      if (value === null) {
        if (header.required) problems.push(`${where}: required header ${name} is missing`);
        continue;
      }
      const schema = header.schema as OpenAPIV3_1.SchemaObject;
      const numeric = schema.type === 'integer' || schema.type === 'number';
      const typed = numeric && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
      problems.push(...this.validate(`${where} header ${name}`, `${at}/schema`, typed));
    }
    sent.forEach((_value, name) => {
      if (!declared.has(name) && !GENERAL_HEADERS.test(name)) {
        problems.push(`${where}: header ${name} is not documented`);
      }
    });
    return problems;
  }

  private body(where: string, response: Response, pointer: string, answer: RecordedAnswer) {
    const type = answer.headers.get('content-type')?.split(';')[0]!.trim();
    if (response.content === undefined) {
      const empty = answer.body === undefined || answer.body === '';
      return empty && type === undefined ? [] : [`${where}: a body where the document has none`];
    }
    const media = type === undefined ? undefined : response.content[type];
    if (media === undefined) return [`${where}: content type ${type} is not documented`];
    const at = `${pointer}/content/${segment(type!)}/schema`;
    const problems = this.validate(where, at, answer.body);
    // JSON Schema 2020-12's content vocabulary, which openapi-types does not know.
    const schema = media.schema as OpenAPIV3_1.SchemaObject & { contentSchema?: object };
    if (schema.contentMediaType === 'application/x-ndjson' && schema.contentSchema) {
      const lines = String(answer.body)
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as unknown);
      problems.push(...this.validate(`${where} lines`, `${at}/contentSchema`, lines));
    }
    return problems;
  }

  private validate(where: string, pointer: string, value: unknown): string[] {
    let validator = this.validators.get(pointer);
    if (validator === undefined) {
      validator = this.ajv.compile({ $ref: `${BASE}#${encodeURI(pointer)}` });
      this.validators.set(pointer, validator);
    }
    if (validator(value)) return [];
    return (validator.errors ?? []).map(
      (e) => `${where}: ${e.instancePath || '(body)'} ${e.message} (${e.schemaPath})`,
    );
  }

  /** A `$ref`'d object and its pointer, or the object itself at the pointer given. */
  private resolve<T>(object: T | OpenAPIV3_1.ReferenceObject, pointer: string): [T, string] {
    if (typeof object !== 'object' || object === null || !('$ref' in object)) {
      return [object as T, pointer];
    }
    const target = object.$ref.slice(1);
    const found = target
      .split('/')
      .slice(1)
      .reduce<unknown>(
        (node, key) =>
          (node as Record<string, unknown>)[key.replaceAll('~1', '/').replaceAll('~0', '~')],
        this.document,
      );
    return [found as T, target];
  }
}
