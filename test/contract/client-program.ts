/**
 * The source of a client program written as a client author would write it: openapi-fetch
 * typed by the `paths` openapi-typescript generated from the served document (`./api`, next
 * to it). The contract test writes both into a scratch directory, type-checks them (a call the
 * document does not describe, a wrong parameter, a body read as the wrong type does not
 * compile) and runs the program against the running stack. It calls every operation, for
 * each status it can bring about, and records each answer for the test to check against the
 * document; it is a string because the types it compiles against exist only once generated.
 */
export const CLIENT_PROGRAM = String.raw`
import createClient from 'openapi-fetch';
import type { ContractContext } from '../../test/contract/contract-context';
import type { paths } from './api';

type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type ExportContent = paths['/v1/export']['get']['responses'][200]['content'];
// The export's streams are text to a generated client, never one parsed object.
export const ndjsonIsText: Exact<ExportContent['application/x-ndjson'], string> = true;
export const csvIsText: Exact<ExportContent['text/csv'], string> = true;

const NO_SUCH_ID = 'wh_0123456789abcdef';

export async function callEveryOperation(ctx: ContractContext): Promise<void> {
  const api = createClient<paths>({ baseUrl: ctx.baseUrl });
  const as = (apiKey: string) => ({ headers: { 'x-api-key': apiKey } });
  const { free, pro, enterprise } = ctx.keys;

  // Registration: 201, 400, 409, 413 and 415, then 429 once the hourly attempts are spent.
  const email = 'contract-' + Date.now() + '@example.com';
  const registered = await api.POST('/v1/register', { body: { email, name: 'Contract' } });
  ctx.record('register', registered);
  const spent: string = registered.data!.apiKey;
  ctx.record('register', await api.POST('/v1/register', { body: { email: 'nope', name: 'X' } }));
  ctx.record('register', await api.POST('/v1/register', { body: { email, name: 'Again' } }));
  ctx.record(
    'register',
    await api.POST('/v1/register', {
      body: { email: 'big@example.com', name: 'x'.repeat(20_000) },
    }),
  );
  ctx.record(
    'register',
    await api.POST('/v1/register', {
      body: { email: 'form@example.com', name: 'Form' },
      bodySerializer: (body) => new URLSearchParams({ email: body.email, name: body.name }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
  );
  for (let attempt = 0; attempt < 10; attempt++) {
    const next = await api.POST('/v1/register', {
      body: { email: 'limit-' + attempt + '-' + email, name: 'Limit' },
    });
    ctx.record('register', next);
    if (next.response.status === 429) break;
  }

  // The catalog's reads, per tier, with their ETags and 304s, and each refusal.
  const tools = await api.GET('/v1/tools', {
    params: { query: { limit: 2, sort: '-rating' }, header: { 'X-Request-Id': 'contract-list' } },
    ...as(free),
  });
  ctx.record('listTools', tools);
  ctx.record(
    'listTools',
    await api.GET('/v1/tools', {
      params: {
        query: { limit: 2, sort: '-rating' },
        header: { 'If-None-Match': tools.response.headers.get('etag') ?? '' },
      },
      ...as(free),
    }),
  );
  ctx.record('listTools', await api.GET('/v1/tools', { params: { query: { page: 2 } }, ...as(pro) }));
  ctx.record('listTools', await api.GET('/v1/tools', { params: { query: { limit: 0 } }, ...as(free) }));
  ctx.record('listTools', await api.GET('/v1/tools'));
  ctx.record('listTools', await api.GET('/v1/tools', as('tdk_' + 'A'.repeat(38))));
  const first: string = tools.data!.data[0]!.slug;
  const second: string = tools.data!.data[1]!.slug;

  const tool = await api.GET('/v1/tools/{slug}', { params: { path: { slug: first } }, ...as(pro) });
  ctx.record('getTool', tool);
  const pros: string[] | undefined = 'pros' in tool.data!.data ? tool.data!.data.pros : undefined;
  if (pros === undefined) throw new Error('a Pro key got the Free fields');
  ctx.record(
    'getTool',
    await api.GET('/v1/tools/{slug}', {
      params: {
        path: { slug: first },
        header: { 'If-None-Match': tool.response.headers.get('etag') ?? '' },
      },
      ...as(pro),
    }),
  );
  ctx.record('getTool', await api.GET('/v1/tools/{slug}', { params: { path: { slug: first } }, ...as(free) }));
  ctx.record('getTool', await api.GET('/v1/tools/{slug}', { params: { path: { slug: 'no-such-tool' } }, ...as(free) }));
  ctx.record('getTool', await api.GET('/v1/tools/{slug}', { params: { path: { slug: 'x'.repeat(101) } }, ...as(free) }));

  const history = await api.GET('/v1/tools/{slug}/history', { params: { path: { slug: first } }, ...as(pro) });
  ctx.record('getToolHistory', history);
  if (history.data!.data[0]!.type !== 'tool.created') throw new Error('a bundled tool without its creation');
  ctx.record(
    'getToolHistory',
    await api.GET('/v1/tools/{slug}/history', {
      params: {
        path: { slug: first },
        header: { 'If-None-Match': history.response.headers.get('etag') ?? '' },
      },
      ...as(pro),
    }),
  );
  ctx.record('getToolHistory', await api.GET('/v1/tools/{slug}/history', { params: { path: { slug: 'no-such-tool' } }, ...as(free) }));
  ctx.record('getToolHistory', await api.GET('/v1/tools/{slug}/history', { params: { path: { slug: 'x'.repeat(101) } }, ...as(free) }));

  const changes = await api.GET('/v1/changes', { params: { query: { limit: 3 } }, ...as(free) });
  ctx.record('listChanges', changes);
  const nextCursor: string = changes.data!.meta.nextCursor;
  ctx.record('listChanges', await api.GET('/v1/changes', { params: { query: { since: nextCursor, limit: 3 } }, ...as(free) }));
  ctx.record('listChanges', await api.GET('/v1/changes', { params: { query: { since: 'not-a-cursor' } }, ...as(free) }));
  // A cursor of a version this catalog never reached (c1:999999999).
  const unknownVersion = 'YzE6OTk5OTk5OTk5';
  ctx.record('listChanges', await api.GET('/v1/changes', { params: { query: { since: unknownVersion } }, ...as(free) }));

  const categories = await api.GET('/v1/categories', as(free));
  ctx.record('listCategories', categories);
  ctx.record(
    'listCategories',
    await api.GET('/v1/categories', {
      params: { header: { 'If-None-Match': categories.response.headers.get('etag') ?? '' } },
      ...as(free),
    }),
  );

  ctx.record('searchTools', await api.GET('/v1/search', { params: { query: { q: 'vector database', limit: 3 } }, ...as(free) }));
  ctx.record('searchTools', await api.GET('/v1/search', { params: { query: { q: 'agent', category: 'agent-frameworks' } }, ...as(pro) }));
  ctx.record('searchTools', await api.GET('/v1/search', { params: { query: { q: 'x' } }, ...as(free) }));

  const compare = (tool1: string, tool2: string, apiKey: string) =>
    api.GET('/v1/compare/{tool1}/{tool2}', { params: { path: { tool1, tool2 } }, ...as(apiKey) });
  const compared = await compare(first, second, pro);
  ctx.record('compareTools', compared);
  const difference: number = compared.data!.data.comparison.ratingDifference;
  if (!Number.isFinite(difference)) throw new Error('no rating difference');
  ctx.record('compareTools', await compare(first, second, free));
  ctx.record('compareTools', await compare(first, 'no-such-tool', pro));
  ctx.record('compareTools', await compare(first, first, pro));

  // The export, read as what each format is.
  const ndjson = await api.GET('/v1/export', { params: { query: { format: 'ndjson' } }, parseAs: 'text', ...as(enterprise) });
  ctx.record('exportTools', ndjson);
  const exported = await api.GET('/v1/export', { params: { query: { format: 'json' } }, ...as(enterprise) });
  ctx.record('exportTools', exported);
  if (typeof exported.data !== 'object') throw new Error('format=json is one JSON document');
  const total: number = exported.data.meta.total;
  if (ndjson.data!.trimEnd().split('\n').length !== total) throw new Error('not one line per tool');
  ctx.record('exportTools', await api.GET('/v1/export', { params: { query: { format: 'csv' } }, parseAs: 'text', ...as(enterprise) }));
  ctx.record('exportTools', await api.GET('/v1/export', as(pro)));
  ctx.record(
    'exportTools',
    // @ts-expect-error: the document lists the formats, and xml is none of them
    await api.GET('/v1/export', { params: { query: { format: 'xml' } }, ...as(enterprise) }),
  );

  // Webhooks: subscribe, look, ping, deliveries, delete; then the events themselves.
  const created = await api.POST('/v1/webhooks', {
    body: {
      url: ctx.receiverUrl,
      events: ['tool.created', 'tool.updated', 'tool.deleted', 'quota.warning'],
      description: 'contract test',
    },
    ...as(enterprise),
  });
  ctx.record('createWebhook', created);
  const id: string = created.data!.id;
  ctx.record('createWebhook', await api.POST('/v1/webhooks', { body: { url: ctx.receiverUrl, events: [] }, ...as(enterprise) }));
  ctx.record('createWebhook', await api.POST('/v1/webhooks', { body: { url: ctx.receiverUrl, events: ['tool.created'] }, ...as(pro) }));
  ctx.record('listWebhooks', await api.GET('/v1/webhooks', as(enterprise)));
  ctx.record('listWebhooks', await api.GET('/v1/webhooks', as(free)));
  const byId = (apiKey: string, webhookId = id) => ({ params: { path: { id: webhookId } }, ...as(apiKey) });
  ctx.record('getWebhook', await api.GET('/v1/webhooks/{id}', byId(enterprise)));
  ctx.record('getWebhook', await api.GET('/v1/webhooks/{id}', byId(enterprise, NO_SUCH_ID)));
  ctx.record('getWebhook', await api.GET('/v1/webhooks/{id}', byId(pro)));
  const pinged = await api.POST('/v1/webhooks/{id}/test', byId(enterprise));
  ctx.record('testWebhook', pinged);
  const eventId: string = pinged.data!.eventId;
  ctx.record('testWebhook', await api.POST('/v1/webhooks/{id}/test', byId(enterprise, NO_SUCH_ID)));
  await ctx.waitForEvent('ping');
  const deliveries = await api.GET('/v1/webhooks/{id}/deliveries', byId(enterprise));
  ctx.record('listWebhookDeliveries', deliveries);
  if (!deliveries.data!.data.some((attempt) => attempt.eventId === eventId)) {
    throw new Error('the ping is not among the deliveries');
  }
  ctx.record('listWebhookDeliveries', await api.GET('/v1/webhooks/{id}/deliveries', byId(enterprise, NO_SUCH_ID)));
  const other = await api.POST('/v1/webhooks', {
    body: { url: ctx.receiverUrl + '/other', events: ['tool.deleted'] },
    ...as(enterprise),
  });
  ctx.record('createWebhook', other);
  ctx.record('deleteWebhook', await api.DELETE('/v1/webhooks/{id}', byId(enterprise, other.data!.id)));
  ctx.record('deleteWebhook', await api.DELETE('/v1/webhooks/{id}', byId(enterprise, other.data!.id)));
  ctx.record('deleteWebhook', await api.DELETE('/v1/webhooks/{id}', byId(free, NO_SUCH_ID)));

  await ctx.changeCatalog();
  // The subscription's key past 80% of its quota: a quota.warning, and at the end a 429.
  for (let n = 0; n < 100 && !ctx.received('quota.warning'); n++) {
    const counted = await api.GET('/v1/categories', as(enterprise));
    ctx.record('listCategories', counted);
    if (counted.response.status === 429) break;
  }
  await ctx.waitForEvent('quota.warning');

  // A key's daily quota spent: 429 with Retry-After.
  for (let n = 0; n < 1_000; n++) {
    const counted = await api.GET('/v1/categories', as(spent));
    ctx.record('listCategories', counted);
    if (counted.response.status === 429) break;
  }

  // Usage: free of quota, also for the key past its quota just now.
  const usage = await api.GET('/v1/usage', as(spent));
  ctx.record('getUsage', usage);
  if (usage.data!.data.remaining !== 0) throw new Error('the spent key has units left');
  ctx.record('getUsage', await api.GET('/v1/usage'));

  // Search analytics: the free key searched above; its own queries, free of quota.
  const searches = await api.GET('/v1/usage/searches', { params: { query: { days: 7 } }, ...as(free) });
  ctx.record('getSearchUsage', searches);
  if (searches.data!.data.totals.searches === 0) throw new Error('the searches above were not counted');
  ctx.record('getSearchUsage', await api.GET('/v1/usage/searches', { params: { query: { days: 31 } }, ...as(free) }));
  ctx.record('getSearchUsage', await api.GET('/v1/usage/searches'));

  // Key roll: a grace too long (400); no grace (201), after which the old secret is refused (401).
  ctx.record('rollKey', await api.POST('/v1/keys/roll', { body: { graceSeconds: 604801 }, ...as(free) }));
  const rolled = await api.POST('/v1/keys/roll', { body: { graceSeconds: 0 }, ...as(free) });
  ctx.record('rollKey', rolled);
  ctx.record('rollKey', await api.POST('/v1/keys/roll', as(free)));
  ctx.record('getUsage', await api.GET('/v1/usage', as(rolled.data!.apiKey)));
  // The secret that rolled is now the previous one: it cannot manage the key (403).
  const graced = await api.POST('/v1/keys/roll', { body: { graceSeconds: 60 }, ...as(rolled.data!.apiKey) });
  ctx.record('rollKey', graced);
  ctx.record('rollKey', await api.POST('/v1/keys/roll', { body: { graceSeconds: 0 }, ...as(rolled.data!.apiKey) }));

  // Key events: the key's history (200), free of quota; without a key 401.
  ctx.record('listKeyEvents', await api.GET('/v1/keys/events', as(graced.data!.apiKey)));
  ctx.record('listKeyEvents', await api.GET('/v1/keys/events', {}));

  // Leak reports, as a secret scanner sends them: signed (200, the previous secret a true
  // positive), unsigned (401), too many tokens (413).
  const found = (token: string) => ({ token, type: 'tool_directory_api_key', url: 'https://example.com/leak', source: 'content' });
  const leak = [found(rolled.data!.apiKey), found('tdk_not_ours')];
  const leaked = await api.POST('/v1/keys/leaks', { body: leak, headers: ctx.leakReportHeaders(JSON.stringify(leak)) });
  ctx.record('reportLeakedKeys', leaked);
  if (leaked.data?.[0]?.label !== 'true_positive') throw new Error('the leaked secret was not found');
  ctx.record('reportLeakedKeys', await api.POST('/v1/keys/leaks', { body: leak }));
  const flood = Array.from({ length: 1001 }, () => found('tdk_x'));
  ctx.record('reportLeakedKeys', await api.POST('/v1/keys/leaks', { body: flood, headers: ctx.leakReportHeaders(JSON.stringify(flood)) }));

  // MCP: JSON-RPC messages, a notification (202), refusals before the SDK (400, 401, 413, 415),
  // the transport's own (406), and a tools/call of the key past its quota (429).
  type McpBody = { method: string; id?: number; params?: Record<string, unknown> };
  const mcp = (apiKey: string | undefined, message: McpBody) =>
    api.POST('/v1/mcp', {
      body: { jsonrpc: '2.0', ...message },
      headers: { accept: 'application/json, text/event-stream', ...(apiKey && { 'x-api-key': apiKey }) },
    });
  const initialized = await mcp(pro, {
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'contract', version: '1.0.0' } },
  });
  ctx.record('sendMcpMessage', initialized);
  if (initialized.data!.result === undefined) throw new Error('initialize has no result');
  ctx.record('sendMcpMessage', await mcp(pro, { method: 'notifications/initialized' }));
  ctx.record('sendMcpMessage', await mcp(pro, { id: 2, method: 'tools/list' }));
  const call = (name: string, args: Record<string, unknown>) => ({ id: 3, method: 'tools/call', params: { name, arguments: args } });
  ctx.record('sendMcpMessage', await mcp(free, call('search_tools', { q: 'agents' })));
  ctx.record('sendMcpMessage', await mcp(spent, call('list_categories', {})));
  ctx.record('sendMcpMessage', await mcp(pro, { id: 4, method: '' }));
  ctx.record('sendMcpMessage', await mcp(undefined, { id: 5, method: 'tools/list' }));
  ctx.record('sendMcpMessage', await mcp(pro, { id: 6, method: 'tools/list', params: { padding: 'x'.repeat(20_000) } }));
  ctx.record(
    'sendMcpMessage',
    await api.POST('/v1/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, ...as(pro) }),
  );
  ctx.record(
    'sendMcpMessage',
    await api.POST('/v1/mcp', {
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      bodySerializer: () => 'tools/list',
      headers: { 'x-api-key': pro, 'content-type': 'text/plain' },
    }),
  );

  // The catalog down: the gateway answers for it.
  await ctx.stopCatalog();
  ctx.record('listTools', await api.GET('/v1/tools', { params: { query: { page: 3 } }, ...as(pro) }));
}
`;
