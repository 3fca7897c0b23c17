/**
 * Static checks of the operator-facing observability artefacts: the Grafana dashboard, the
 * Prometheus alert rules and their runbooks in docs/observability.md. The rules' behaviour is
 * tested by promtool (helm/tool-directory/files/alerts.test.yml), not here.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { DASHBOARD_FILE, renderDashboard } from '../../scripts/generate-dashboard';

const ROOT = resolve(__dirname, '..', '..');
const ALERTS_FILE = 'helm/tool-directory/files/alerts.yml';
const ALERT_TESTS_FILE = 'helm/tool-directory/files/alerts.test.yml';
const DOC_FILE = 'docs/observability.md';
/** The SLO burn-rate alerts have their runbooks next to the objectives. */
const SLO_DOC_FILE = 'docs/slo.md';
/** The webhook alerts have theirs with the rest of the operators' webhook guide. */
const WEBHOOKS_DOC_FILE = 'docs/webhooks.md';

const read = (file: string) => readFileSync(resolve(ROOT, file), 'utf8');

// ------------------------------------------------------------------------------ metric names

type MetricType = 'counter' | 'gauge' | 'histogram';

/** The metrics the services export (docs/observability.md), plus Prometheus' own `up`. */
const APP_METRICS: Record<string, MetricType> = {
  http_requests_total: 'counter',
  http_request_duration_seconds: 'histogram',
  gateway_quota_decisions_total: 'counter',
  gateway_auth_failures_total: 'counter',
  gateway_upstream_duration_seconds: 'histogram',
  gateway_upstream_errors_total: 'counter',
  gateway_upstream_retries_total: 'counter',
  gateway_redis_errors_total: 'counter',
  gateway_quota_insurance_active: 'gauge',
  gateway_quota_insurance_decisions_total: 'counter',
  gateway_key_cache_lookups_total: 'counter',
  gateway_key_last_use_writes_total: 'counter',
  gateway_response_cache_requests_total: 'counter',
  gateway_response_cache_evictions_total: 'counter',
  gateway_quota_counters_lost_total: 'counter',
  http_silent_connections_closed_total: 'counter',
  gateway_response_cache_bytes: 'gauge',
  gateway_mcp_tool_calls_total: 'counter',
  catalog_search_duration_seconds: 'histogram',
  catalog_store_operation_duration_seconds: 'histogram',
  catalog_store_errors_total: 'counter',
  catalog_webhook_deliveries_total: 'counter',
  catalog_webhook_attempts_total: 'counter',
  catalog_webhook_queue_depth: 'gauge',
  catalog_webhook_oldest_pending_seconds: 'gauge',
};

/** prom-client's default metrics (collectDefaultMetrics, prom-client 15). */
const DEFAULT_METRICS: Record<string, MetricType> = {
  process_cpu_user_seconds_total: 'counter',
  process_cpu_system_seconds_total: 'counter',
  process_cpu_seconds_total: 'counter',
  process_start_time_seconds: 'gauge',
  process_resident_memory_bytes: 'gauge',
  process_virtual_memory_bytes: 'gauge',
  process_heap_bytes: 'gauge',
  process_open_fds: 'gauge',
  process_max_fds: 'gauge',
  nodejs_eventloop_lag_seconds: 'gauge',
  nodejs_eventloop_lag_min_seconds: 'gauge',
  nodejs_eventloop_lag_max_seconds: 'gauge',
  nodejs_eventloop_lag_mean_seconds: 'gauge',
  nodejs_eventloop_lag_stddev_seconds: 'gauge',
  nodejs_eventloop_lag_p50_seconds: 'gauge',
  nodejs_eventloop_lag_p90_seconds: 'gauge',
  nodejs_eventloop_lag_p99_seconds: 'gauge',
  nodejs_active_resources: 'gauge',
  nodejs_active_resources_total: 'gauge',
  nodejs_active_handles: 'gauge',
  nodejs_active_handles_total: 'gauge',
  nodejs_active_requests: 'gauge',
  nodejs_active_requests_total: 'gauge',
  nodejs_heap_size_total_bytes: 'gauge',
  nodejs_heap_size_used_bytes: 'gauge',
  nodejs_external_memory_bytes: 'gauge',
  nodejs_heap_space_size_total_bytes: 'gauge',
  nodejs_heap_space_size_used_bytes: 'gauge',
  nodejs_heap_space_size_available_bytes: 'gauge',
  nodejs_version_info: 'gauge',
  nodejs_gc_duration_seconds: 'histogram',
};

/** Every series name a query may select: histograms expand to _bucket, _sum and _count. */
function seriesNames(metrics: Record<string, MetricType>): Set<string> {
  const names = new Set<string>(['up']);
  for (const [name, type] of Object.entries(metrics)) {
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    else names.add(name);
  }
  return names;
}

const KNOWN_SERIES = seriesNames({ ...APP_METRICS, ...DEFAULT_METRICS });

const PROMQL_KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects. Not a full parser, but enough for the
 * expressions in this repository: strings, label matchers, ranges, grouping clauses and
 * Grafana variables are removed; what remains that looks like an identifier and is neither a
 * function or aggregation (followed by "("), a keyword nor part of a number is a metric name.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const start = match.index ?? 0;
    const word = match[0];
    if (/[0-9.]/.test(stripped[start - 1] ?? '')) continue; // 1e3, 5m
    if (/^\s*\(/.test(stripped.slice(start + word.length))) continue; // function, aggregation
    if (PROMQL_KEYWORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names];
}

describe('metricNames (the PromQL name extractor used below)', () => {
  it('finds selected metrics and ignores functions, labels, ranges and variables', () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (service, le) (rate(http_request_duration_seconds_bucket{service=~"$service", route!~"/healthz|/readyz"}[$__rate_interval])))',
      ),
    ).toEqual(['http_request_duration_seconds_bucket']);
    expect(
      metricNames(
        'sum(rate(a_total{x="y{z}"}[5m] offset 1h)) / on (service) group_left b > bool 1e3 or max(c) by (d)',
      ).sort(),
    ).toEqual(['a_total', 'b', 'c']);
    expect(metricNames('namespace_service:http_requests:rate5m > 0.1')).toEqual([
      'namespace_service:http_requests:rate5m',
    ]);
  });
});

// ------------------------------------------------------------------------------ dashboard

interface Target {
  refId?: string;
  expr?: string;
  datasource?: { type?: string; uid?: string };
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}

interface Variable {
  name: string;
  type: string;
  query: unknown;
  datasource?: { type?: string; uid?: string };
}

interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  templating: { list: Variable[] };
  panels: Panel[];
}

const dashboardText = read(DASHBOARD_FILE);

function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

/** Panels the issue asks for: a title pattern and the metrics each must query. */
const REQUIRED_PANELS: { title: RegExp; metrics: string[] }[] = [
  { title: /^Request rate by service and route$/, metrics: ['http_requests_total'] },
  { title: /^Error rate \(5xx ratio\) by service$/, metrics: ['http_requests_total'] },
  { title: /^Latency p50 by route$/, metrics: ['http_request_duration_seconds_bucket'] },
  { title: /^Latency p95 by route$/, metrics: ['http_request_duration_seconds_bucket'] },
  { title: /^Latency p99 by route$/, metrics: ['http_request_duration_seconds_bucket'] },
  { title: /^Quota rejections \(429\) by tier$/, metrics: ['gateway_quota_decisions_total'] },
  {
    title: /^Latency the gateway adds/,
    metrics: [
      'http_request_duration_seconds_sum',
      'http_request_duration_seconds_count',
      'gateway_upstream_duration_seconds_sum',
      'gateway_upstream_duration_seconds_count',
    ],
  },
  {
    title: /^Upstream \(catalog\) latency p95/,
    metrics: ['gateway_upstream_duration_seconds_bucket'],
  },
  { title: /^Upstream errors by kind$/, metrics: ['gateway_upstream_errors_total'] },
  {
    title: /^Gateway response-cache hit ratio$/,
    metrics: ['gateway_response_cache_requests_total'],
  },
  { title: /^Gateway response-cache size$/, metrics: ['gateway_response_cache_bytes'] },
  {
    title: /^Gateway response-cache evictions$/,
    metrics: ['gateway_response_cache_evictions_total'],
  },
  { title: /^Redis errors by operation$/, metrics: ['gateway_redis_errors_total'] },
  {
    title: /^Replicas in Redis insurance mode$/,
    metrics: ['gateway_quota_insurance_active'],
  },
  { title: /^Auth failures by reason$/, metrics: ['gateway_auth_failures_total'] },
  { title: /^Key-cache hit ratio$/, metrics: ['gateway_key_cache_lookups_total'] },
  { title: /^Search latency by store$/, metrics: ['catalog_search_duration_seconds_bucket'] },
  {
    title: /^Store operation latency/,
    metrics: ['catalog_store_operation_duration_seconds_bucket'],
  },
  { title: /^Event-loop lag/, metrics: ['nodejs_eventloop_lag_p99_seconds'] },
  {
    title: /^Memory/,
    metrics: ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes'],
  },
];

describe('Grafana dashboard', () => {
  let dashboard: Dashboard;

  it('is valid JSON', () => {
    dashboard = JSON.parse(dashboardText) as Dashboard;
    expect(dashboard.uid).toBe('tool-directory');
    expect(dashboard.title).toBeTruthy();
  });

  it('is exactly what scripts/generate-dashboard.ts writes', () => {
    // If this fails: npx tsx scripts/generate-dashboard.ts
    expect(dashboardText).toBe(renderDashboard());
  });

  it('uses schema version 39 or later', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
  });

  it('has a Prometheus datasource variable and a service variable', () => {
    const vars = dashboard.templating.list;
    const datasource = vars.find((v) => v.name === 'datasource');
    expect(datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const service = vars.find((v) => v.name === 'service');
    expect(service).toMatchObject({ type: 'query', datasource: { uid: '${datasource}' } });
    const query = typeof service?.query === 'string' ? service.query : '';
    const metric = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*service\s*\)$/.exec(query);
    expect(metric?.[1]).toBeDefined();
    expect(KNOWN_SERIES.has(metric?.[1] ?? '')).toBe(true);
  });

  it('has unique panel ids', () => {
    const ids = allPanels(dashboard.panels).map((p) => p.id);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives every panel the datasource variable and at least one query', () => {
    const problems: string[] = [];
    for (const panel of allPanels(dashboard.panels).filter((p) => p.type !== 'row')) {
      const where = `panel ${panel.id} "${panel.title}"`;
      if (panel.datasource?.type !== 'prometheus' || panel.datasource.uid !== '${datasource}') {
        problems.push(`${where}: datasource is not the \${datasource} variable`);
      }
      const targets = panel.targets ?? [];
      if (targets.length === 0) problems.push(`${where}: no query`);
      const refIds = targets.map((t) => t.refId);
      if (new Set(refIds).size !== refIds.length) problems.push(`${where}: duplicate refId`);
      for (const target of targets) {
        if (!target.expr?.trim()) problems.push(`${where}: query ${target.refId} has no expr`);
        if (target.datasource?.uid !== '${datasource}') {
          problems.push(`${where}: query ${target.refId} has another datasource`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('lays panels out on the 24-column grid without overlaps', () => {
    const problems: string[] = [];
    const cells = new Map<string, string>();
    for (const panel of allPanels(dashboard.panels)) {
      const { h, w, x, y } = panel.gridPos;
      if (x < 0 || x + w > 24) problems.push(`"${panel.title}" is outside the grid`);
      for (let i = x; i < x + w; i++) {
        for (let j = y; j < y + h; j++) {
          const owner = cells.get(`${i},${j}`);
          if (owner) problems.push(`"${panel.title}" overlaps "${owner}"`);
          cells.set(`${i},${j}`, panel.title);
        }
      }
    }
    expect([...new Set(problems)]).toEqual([]);
  });

  it('queries only metrics the services export', () => {
    const used = new Set<string>();
    const unknown: string[] = [];
    for (const panel of allPanels(dashboard.panels)) {
      for (const target of panel.targets ?? []) {
        for (const name of metricNames(target.expr ?? '')) {
          used.add(name);
          if (!KNOWN_SERIES.has(name)) unknown.push(`"${panel.title}": ${name}`);
        }
      }
    }
    expect(unknown).toEqual([]);
    expect(used.size).toBeGreaterThan(10);
  });

  it.each(REQUIRED_PANELS.map((r) => [r.title.source, r] as const))(
    'has the panel %s',
    (_title, required) => {
      const panel = allPanels(dashboard.panels).find((p) => required.title.test(p.title));
      expect(panel).toBeDefined();
      const used = (panel?.targets ?? []).flatMap((t) => metricNames(t.expr ?? ''));
      expect(used).toEqual(expect.arrayContaining(required.metrics));
    },
  );
});

// ------------------------------------------------------------------------------ alerts

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}

/** The alerts the issue asks for. */
const REQUIRED_ALERTS = [
  'ToolDirectoryGatewayHigh5xx',
  'ToolDirectoryCatalogHigh5xx',
  'ToolDirectoryGatewayHighLatency',
  'ToolDirectoryCatalogHighLatency',
  'ToolDirectoryGatewayRedisInsuranceMode',
  'ToolDirectoryCatalogUnreachable',
  'ToolDirectoryQuotaRejectionSpike',
  'ToolDirectoryTargetDown',
  'ToolDirectoryWebhookBacklog',
  'ToolDirectoryWebhookFailures',
];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of every Markdown heading outside code fences. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading?.[1]) anchors.add(headingAnchor(heading[1]));
  }
  return anchors;
}

describe('alert rules', () => {
  const rules = (parse(read(ALERTS_FILE)) as RuleFile).groups.flatMap((g) => g.rules);
  const alerts = rules.filter((r) => r.alert !== undefined);
  const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
  const docAnchors: Record<string, Set<string>> = {
    [DOC_FILE]: headingAnchors(read(DOC_FILE)),
    [SLO_DOC_FILE]: headingAnchors(read(SLO_DOC_FILE)),
    [WEBHOOKS_DOC_FILE]: headingAnchors(read(WEBHOOKS_DOC_FILE)),
  };

  it('has every alert the issue asks for', () => {
    expect(alerts.map((a) => a.alert)).toEqual(expect.arrayContaining(REQUIRED_ALERTS));
    const names = alerts.map((a) => a.alert);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(alerts.map((a) => [a.alert, a] as const))(
    '%s has a severity, a for duration, summary, description and runbook',
    (_name, alert) => {
      expect(['critical', 'warning', 'info']).toContain(alert.labels?.severity);
      expect(alert.for).toMatch(/^\d+[smh]$/);
      expect(alert.annotations?.summary?.trim()).toBeTruthy();
      expect(alert.annotations?.description?.trim()).toBeTruthy();
      const runbook = alert.annotations?.runbook_url ?? '';
      const [path, anchor] = runbook.split('#');
      const doc = [DOC_FILE, SLO_DOC_FILE, WEBHOOKS_DOC_FILE].find((file) => path?.endsWith(file));
      expect(doc).toBeDefined();
      expect(anchor).toBe(alert.alert?.toLowerCase());
      expect(docAnchors[doc ?? DOC_FILE]?.has(anchor ?? '')).toBe(true);
    },
  );

  it('queries only exported metrics and the recording rules it defines', () => {
    const unknown: string[] = [];
    for (const rule of rules) {
      for (const name of metricNames(rule.expr)) {
        if (!KNOWN_SERIES.has(name) && !recorded.has(name)) {
          unknown.push(`${rule.alert ?? rule.record}: ${name}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });

  it('has a promtool test that sees every alert fire', () => {
    interface AlertTest {
      alertname: string;
      exp_alerts?: unknown[];
    }
    const tests = parse(read(ALERT_TESTS_FILE)) as {
      tests: { alert_rule_test?: AlertTest[] }[];
    };
    const fired = new Set(
      tests.tests
        .flatMap((t) => t.alert_rule_test ?? [])
        .filter((t) => (t.exp_alerts ?? []).length > 0)
        .map((t) => t.alertname),
    );
    expect(alerts.map((a) => a.alert).filter((name) => !fired.has(name ?? ''))).toEqual([]);
  });
});

describe('docs/observability.md', () => {
  it('documents every metric the services export', () => {
    const doc = read(DOC_FILE);
    expect(Object.keys(APP_METRICS).filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });
});
