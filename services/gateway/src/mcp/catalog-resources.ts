import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type ReadResourceResult,
} from '@modelcontextprotocol/server';
import type { FastifyRequest } from 'fastify';
import type { CatalogRoute } from '../../../shared/contract';
import type { Upstream } from '../proxy/read-catalog';
import { mirroredRoute, segment } from './catalog-tool';
import { errorOf, readMirroredRoute } from './mirrored-read';

/**
 * A resource of the endpoint: a read of one catalog route, its JSON answer (the records the
 * caller's tier gets from REST) the resource's text. A fixed URI is a resource; a URI with a
 * `{variable}` a resource template.
 */
export interface CatalogResource {
  name: string;
  /** The URI, or the URI template (RFC 6570) of a template. */
  uri: string;
  title: string;
  description: string;
  /** The route it mirrors: its tier, scope and cache. */
  route: CatalogRoute;
  /**
   * The catalog path read for the template's variables (none for a fixed URI); undefined when
   * they name nothing (an empty slug).
   */
  path(variables: Record<string, string | string[]>): string | undefined;
}

/** Who answered `path`'s read with its error: a 404 names the URI, the rest are the server's. */
function readError(uri: string, status: number, message: string): ProtocolError {
  return status === 404
    ? new ResourceNotFoundError(uri, message)
    : new ProtocolError(ProtocolErrorCode.InternalError, message);
}

/**
 * Reads a resource for the caller of `request`, as its REST route would answer them: one unit of
 * the quota (taken by the route before this), the same tier rules, the same cache.
 */
export async function readCatalogResource(
  upstream: Upstream,
  request: FastifyRequest,
  resource: CatalogResource,
  uri: string,
  variables: Record<string, string | string[]>,
): Promise<ReadResourceResult> {
  const path = resource.path(variables);
  if (path === undefined) throw new ResourceNotFoundError(uri, `No resource ${uri}`);
  const read = await readMirroredRoute(upstream, request, resource.route, path);
  const error = errorOf(read);
  if (error !== undefined) throw readError(uri, read.status, error);
  return { contents: [{ uri, mimeType: 'application/json', text: read.bytes.toString() }] };
}

/** The one value of a template variable; a list or nothing names no record. */
const single = (value: string | string[] | undefined): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** The resources, in the order `resources/list` and `resources/templates/list` give them. */
export const CATALOG_RESOURCES: readonly CatalogResource[] = [
  {
    name: 'categories',
    uri: 'tooldirectory://categories',
    title: 'The categories',
    description:
      'Every category with its name, slug and number of tools, as GET /v1/categories answers: the envelope `{ data, meta }` as JSON.',
    route: mirroredRoute('/v1/categories'),
    path: () => '/v1/categories',
  },
  {
    name: 'tool',
    uri: 'tooldirectory://tools/{slug}',
    title: 'One tool by its slug',
    description:
      'One tool record by its slug, as GET /v1/tools/{slug} answers for the key: the basic fields for Free keys, the full record for Pro and Enterprise; the envelope `{ data, meta }` as JSON.',
    route: mirroredRoute('/v1/tools/:slug'),
    path: (variables) => {
      const slug = single(variables.slug);
      return slug === undefined ? undefined : `/v1/tools/${segment(slug)}`;
    },
  },
];
