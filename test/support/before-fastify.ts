import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { KEY_CHANGE_POLL_MS } from '../../services/gateway/src/keys/follow-key-changes';
import { type KeyRequest, issueKey } from '../../services/gateway/src/keys/issue-key';
import { inProcessGateway } from './gateway';

/**
 * What the tests of the gateway's paths before Fastify (routes/before-fastify.ts) share: a
 * gateway in this process that tells which requests Fastify answered, keys made before the
 * tests, and a request sent both over a socket (a path may answer) and through `inject`
 * (Fastify always), to compare the two answers.
 */

export type Headers = Record<string, string>;
type Issued = Awaited<ReturnType<typeof issueKey>>;

export interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** Headers that differ between any two answers (the clock, the connection, a unit's count). */
const VARYING = new Set([
  'date',
  'connection',
  'keep-alive',
  'x-ratelimit-remaining',
  'ratelimit',
  'retry-after',
]);

/** An answer with the headers that vary between any two left out, to compare with another. */
export function comparable({ status, headers, body }: Answer) {
  const kept = Object.entries(headers)
    .filter(([name]) => !VARYING.has(name))
    .sort(([a], [b]) => a.localeCompare(b));
  return { status, headers: kept, body };
}

export interface Request {
  method: string;
  url: string;
  headers: Headers;
  body?: string;
}

type KeyKind = 'free' | 'pro' | 'bound' | 'scoped';

/**
 * A gateway listening on a free port, whose Fastify answers are recorded (`METHOD url`) in
 * `fastifyAnswered` and whose log lines in `logLines`.
 */
export async function startPathGateway(catalogUrl: string, corsOrigins: string) {
  const fastifyAnswered: string[] = [];
  const logLines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const gateway = await inProcessGateway(
    { CATALOG_URL: catalogUrl, CORS_ORIGINS: corsOrigins, QUOTA_FREE: '1000', QUOTA_PRO: '1000' },
    undefined,
    {
      logger,
      beforeReady: (app) =>
        app.addHook('onResponse', (request, _reply, done) => {
          fastifyAnswered.push(`${request.method} ${request.url}`);
          done();
        }),
    },
  );
  await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (gateway.app.server.address() as AddressInfo).port;
  let emails = 0;
  const pool: Record<KeyKind, Issued[]> = { free: [], pro: [], bound: [], scoped: [] };

  return {
    ...gateway,
    fastifyAnswered,
    logLines,

    /**
     * Keys made before the tests, once the gateway has followed their creation: the change feed
     * drops each new key's cache entries when its change arrives (KEY_CHANGE_POLL_MS), and a key
     * not cached is Fastify's to check, so a key made during a test could move a request off a
     * path. One bound to addresses and one without the catalog scope besides.
     */
    async issueKeys(free: number, pro: number): Promise<void> {
      const invalidated: number[] = [];
      const cache = gateway.deps.keyCache;
      const invalidateKey = cache.invalidateKey.bind(cache);
      cache.invalidateKey = (keyId) => {
        invalidated.push(Date.now());
        invalidateKey(keyId);
      };
      const make = (request: Partial<KeyRequest>) =>
        issueKey(gateway.deps.keyStore, {
          tier: 'free',
          email: `path-${(emails += 1)}@example.com`,
          name: 'Path',
          useCase: '',
          ...request,
        });
      for (let i = 0; i < free; i++) pool.free.push(await make({}));
      for (let i = 0; i < pro; i++) pool.pro.push(await make({ tier: 'pro' }));
      pool.bound.push(await make({ allowedAddresses: ['10.0.0.0/8'] }));
      pool.scoped.push(await make({ scopes: ['usage'] }));
      // Settled: no key change followed for a few polls.
      const quiet = 4 * KEY_CHANGE_POLL_MS;
      const started = Date.now();
      while (Date.now() - Math.max(started, invalidated.at(-1) ?? 0) < quiet) {
        await new Promise((resolve) => setTimeout(resolve, KEY_CHANGE_POLL_MS / 5));
      }
      cache.invalidateKey = invalidateKey;
    },
    /** A key made before the tests, not used before. */
    issued: (kind: KeyKind = 'free') => pool[kind].shift()!,

    /** The value of one series of the gateway's metrics (0 when not there yet). */
    async series(name: string, ...labels: string[]): Promise<number> {
      const text = await gateway.deps.registry.metrics();
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    },

    /** Over a socket, as a client asks: a path before Fastify may answer. */
    overSocket({ method, url, headers, body }: Request): Promise<Answer> {
      return new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: url, method, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              headers: res.headers as Headers,
              body: Buffer.concat(chunks).toString('latin1'),
            }),
          );
        });
        req.on('error', reject);
        req.end(body);
      });
    },

    /** Through Fastify, always. */
    async throughFastify({ method, url, headers, body }: Request): Promise<Answer> {
      const response = await gateway.app.inject({
        method: method as 'GET',
        url,
        headers,
        ...(body !== undefined && { payload: body }),
      });
      return {
        status: response.statusCode,
        headers: response.headers as Headers,
        body: response.rawPayload.toString('latin1'),
      };
    },
  };
}

export type PathGateway = Awaited<ReturnType<typeof startPathGateway>>;

/**
 * The answer over a socket once a path can give it (the request made twice through Fastify
 * first: a cached answer, a prepared one), and whether Fastify answered it.
 */
export async function preparedThenAsk(gateway: PathGateway, request: Request) {
  await gateway.throughFastify(request);
  await gateway.throughFastify(request);
  gateway.fastifyAnswered.length = 0;
  const answer = await gateway.overSocket(request);
  return { answer, byFastify: gateway.fastifyAnswered.length > 0 };
}
