/**
 * Generates the Grafana dashboard `helm/tool-directory/files/dashboards/tool-directory.json`
 * with the Grafana Foundation SDK (@grafana/grafana-foundation-sdk).
 *
 *   npx tsx scripts/generate-dashboard.ts           # rewrite the JSON
 *   npx tsx scripts/generate-dashboard.ts --check   # exit 1 if the JSON is out of date
 *
 * Edit the panels here, never the JSON: test/observability/dashboard.test.ts fails when the
 * committed JSON differs from this script's output.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import * as prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import * as units from '@grafana/grafana-foundation-sdk/units';

export const DASHBOARD_FILE = 'helm/tool-directory/files/dashboards/tool-directory.json';

/** Every panel and query reads from the Prometheus data source picked in `$datasource`. */
const DATASOURCE: common.DataSourceRef = { type: 'prometheus', uid: '${datasource}' };

/** Rate window: Grafana's $__rate_interval adapts to the scrape interval and the zoom. */
const RATE = '$__rate_interval';

/** Probe routes: polled by the kubelet, left out of error ratios like in the alert rules. */
const NOT_PROBE = 'route!~"/healthz|/readyz"';

interface Query {
  expr: string;
  legend: string;
}

interface PanelSpec {
  title: string;
  description: string;
  /** One of the SDK's `units` constants. */
  unit: string;
  queries: Query[];
  /** Width in grid columns (24 across). */
  width: number;
  /** Upper bound of the y axis (ratios). */
  max?: number;
}

interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

const q = (expr: string, legend: string): Query => ({ expr, legend });

const rate = (selector: string) => `rate(${selector}[${RATE}])`;

/** A selector: the metric name, then its label matchers if any. */
const sel = (metric: string, matchers: string) => (matchers ? `${metric}{${matchers}}` : metric);

/** p-quantile of a histogram, aggregated by the given labels. */
const quantile = (p: number, metric: string, matchers: string, by: string) =>
  `histogram_quantile(${p}, sum by (${by}, le) (${rate(sel(`${metric}_bucket`, matchers))}))`;

/** Mean of a histogram (sum / count) aggregated by the given labels. */
const mean = (metric: string, matchers: string, by: string) =>
  `sum by (${by}) (${rate(`${metric}_sum{${matchers}}`)})` +
  ` / sum by (${by}) (${rate(`${metric}_count{${matchers}}`)})`;

const svc = 'service=~"$service"';

const ROWS: RowSpec[] = [
  {
    title: 'Requests: gateway and catalog',
    panels: [
      {
        title: 'Request rate by service and route',
        description: 'Requests per second, by route template (`unmatched` for unknown paths).',
        unit: units.RequestsPerSecond,
        width: 12,
        queries: [
          q(
            `sum by (service, route) (${rate(`http_requests_total{${svc}}`)})`,
            '{{service}} {{route}}',
          ),
        ],
      },
      {
        title: 'Request rate by status code',
        description: 'Requests per second, by service and HTTP status code.',
        unit: units.RequestsPerSecond,
        width: 12,
        queries: [
          q(
            `sum by (service, status_code) (${rate(`http_requests_total{${svc}}`)})`,
            '{{service}} {{status_code}}',
          ),
        ],
      },
      {
        title: 'Error rate (5xx ratio) by service',
        description:
          'Share of requests answered with a 5xx, probes excluded. Alerts: ToolDirectoryGatewayHigh5xx, ToolDirectoryCatalogHigh5xx (5% for 5 minutes).',
        unit: units.PercentUnit,
        width: 12,
        max: 1,
        queries: [
          q(
            `sum by (service) (${rate(`http_requests_total{${svc}, ${NOT_PROBE}, status_code=~"5.."}`)})` +
              ` / sum by (service) (${rate(`http_requests_total{${svc}, ${NOT_PROBE}}`)})`,
            '{{service}}',
          ),
        ],
      },
      {
        title: 'Errors (4xx and 5xx) by route',
        description: 'Error responses per second, by service, route and status code.',
        unit: units.RequestsPerSecond,
        width: 12,
        queries: [
          q(
            `sum by (service, route, status_code) (${rate(`http_requests_total{${svc}, status_code=~"4..|5.."}`)})`,
            '{{service}} {{route}} {{status_code}}',
          ),
        ],
      },
      ...[0.5, 0.95, 0.99].map((p): PanelSpec => ({
        title: `Latency p${Math.round(p * 100)} by route`,
        description: `${Math.round(p * 100)}th percentile of the request duration, by service and route.`,
        unit: units.Seconds,
        width: 8,
        queries: [
          q(
            quantile(p, 'http_request_duration_seconds', svc, 'service, route'),
            '{{service}} {{route}}',
          ),
        ],
      })),
    ],
  },
  {
    title: 'Gateway: quotas and authentication',
    panels: [
      {
        title: 'Quota rejections (429) by tier',
        description:
          'Requests rejected because the key exhausted its daily quota. Alert: ToolDirectoryQuotaRejectionSpike.',
        unit: units.RequestsPerSecond,
        width: 6,
        queries: [
          q(
            `sum by (tier) (${rate('gateway_quota_decisions_total{outcome="rejected"}')})`,
            '{{tier}}',
          ),
        ],
      },
      {
        title: 'Quota decisions by tier and outcome',
        description: 'Every quota decision, allowed or rejected, per second.',
        unit: units.RequestsPerSecond,
        width: 6,
        queries: [
          q(
            `sum by (tier, outcome) (${rate('gateway_quota_decisions_total')})`,
            '{{tier}} {{outcome}}',
          ),
        ],
      },
      {
        title: 'Auth failures by reason',
        description: 'Requests refused for a missing, malformed, unknown or revoked API key.',
        unit: units.RequestsPerSecond,
        width: 6,
        queries: [q(`sum by (reason) (${rate('gateway_auth_failures_total')})`, '{{reason}}')],
      },
      {
        title: 'Key-cache hit ratio',
        description: 'Share of API-key lookups answered by the in-process key cache.',
        unit: units.PercentUnit,
        width: 6,
        max: 1,
        queries: [
          q(
            `sum (${rate('gateway_key_cache_lookups_total{result="hit"}')})` +
              ` / sum (${rate('gateway_key_cache_lookups_total')})`,
            'hit ratio',
          ),
        ],
      },
    ],
  },
  {
    title: 'Gateway: upstream (catalog)',
    panels: [
      {
        title: 'Latency the gateway adds (mean, 2xx, by route)',
        description:
          'Mean gateway request duration minus mean time waiting for the catalog, for successful requests of each route: the cost of authentication, quota and proxying.',
        unit: units.Seconds,
        width: 8,
        queries: [
          q(
            `(${mean('http_request_duration_seconds', 'service="gateway", status_code=~"2.."', 'route')})` +
              ` - (${mean('gateway_upstream_duration_seconds', 'status_code=~"2.."', 'route')})`,
            '{{route}}',
          ),
        ],
      },
      {
        title: 'Upstream (catalog) latency p95 by route',
        description: '95th percentile of the time the gateway waits for the catalog.',
        unit: units.Seconds,
        width: 8,
        queries: [q(quantile(0.95, 'gateway_upstream_duration_seconds', '', 'route'), '{{route}}')],
      },
      {
        title: 'Upstream errors by kind',
        description:
          'Catalog calls that failed: unavailable (connection refused, name not resolved: 503), timeout (no answer in time: 504), bad_gateway (any other failure, such as a connection reset: 502). Alert: ToolDirectoryCatalogUnreachable.',
        unit: units.OpsPerSecond,
        width: 8,
        queries: [q(`sum by (kind) (${rate('gateway_upstream_errors_total')})`, '{{kind}}')],
      },
    ],
  },
  {
    title: 'Gateway: response cache',
    panels: [
      {
        title: 'Gateway response-cache hit ratio',
        description:
          'Share of requests of the cacheable routes (tools, tool detail, categories, search, compare) answered from the gateway response cache (X-Cache: HIT), over all replicas and per instance. It drops after each catalog change (entries of the older version become misses) and when clients ask mostly for distinct URLs.',
        unit: units.PercentUnit,
        width: 8,
        max: 1,
        queries: [
          q(
            `sum (${rate('gateway_response_cache_requests_total{result="hit"}')})` +
              ` / sum (${rate('gateway_response_cache_requests_total')})`,
            'all replicas',
          ),
          q(
            `sum by (instance) (${rate('gateway_response_cache_requests_total{result="hit"}')})` +
              ` / sum by (instance) (${rate('gateway_response_cache_requests_total')})`,
            '{{instance}}',
          ),
        ],
      },
      {
        title: 'Gateway response-cache size',
        description:
          "Bytes of answers held in each replica's response cache, at most RESPONSE_CACHE_MAX_BYTES (chart: gateway.config.responseCacheMaxBytes). Each entry costs about 1.5 KiB of memory more: compare with RSS in the Runtime row.",
        unit: units.BytesIEC,
        width: 8,
        queries: [q('sum by (instance) (gateway_response_cache_bytes)', '{{instance}}')],
      },
      {
        title: 'Gateway response-cache evictions',
        description:
          'Answers dropped per second to stay within RESPONSE_CACHE_MAX_BYTES. Steady evictions with a low hit ratio: the cache is smaller than the set of URLs clients ask for.',
        unit: units.OpsPerSecond,
        width: 8,
        queries: [
          q(
            `sum by (instance) (${rate('gateway_response_cache_evictions_total')})`,
            '{{instance}}',
          ),
        ],
      },
    ],
  },
  {
    title: 'Gateway: Redis',
    panels: [
      {
        title: 'Replicas in Redis insurance mode',
        description:
          'Gateway replicas enforcing quotas with the in-memory insurance limiter because Redis failed. Alert: ToolDirectoryGatewayRedisInsuranceMode.',
        unit: units.Short,
        width: 8,
        queries: [q('sum (gateway_quota_insurance_active)', 'replicas in insurance mode')],
      },
      {
        title: 'Redis errors by operation',
        description:
          'Redis errors per second: connection errors, and quota checks that failed on Redis and on the insurance limiter.',
        unit: units.OpsPerSecond,
        width: 8,
        queries: [q(`sum by (operation) (${rate('gateway_redis_errors_total')})`, '{{operation}}')],
      },
      {
        title: 'Insurance-limiter decisions by tier',
        description: 'Quota decisions taken by the in-memory insurance limiter.',
        unit: units.RequestsPerSecond,
        width: 8,
        queries: [
          q(`sum by (tier) (${rate('gateway_quota_insurance_decisions_total')})`, '{{tier}}'),
        ],
      },
    ],
  },
  {
    title: 'Catalog: search and store',
    panels: [
      {
        title: 'Search latency by store',
        description: 'p50, p95 and p99 of catalog searches, by store (embedded or mongodb).',
        unit: units.Seconds,
        width: 8,
        queries: [0.5, 0.95, 0.99].map((p) =>
          q(
            quantile(p, 'catalog_search_duration_seconds', '', 'store'),
            `{{store}} p${Math.round(p * 100)}`,
          ),
        ),
      },
      {
        title: 'Store operation latency p95',
        description: '95th percentile of store operations, by store and operation.',
        unit: units.Seconds,
        width: 8,
        queries: [
          q(
            quantile(0.95, 'catalog_store_operation_duration_seconds', '', 'store, operation'),
            '{{store}} {{operation}}',
          ),
        ],
      },
      {
        title: 'Store errors by operation',
        description: 'Failed store operations per second, by store and operation.',
        unit: units.OpsPerSecond,
        width: 8,
        queries: [
          q(
            `sum by (store, operation) (${rate('catalog_store_errors_total')})`,
            '{{store}} {{operation}}',
          ),
        ],
      },
    ],
  },
  {
    title: 'Runtime',
    panels: [
      {
        title: 'Event-loop lag p99',
        description: 'p99 event-loop delay per instance: above ~100ms the process is CPU-bound.',
        unit: units.Seconds,
        width: 6,
        queries: [
          q(
            `max by (service, instance) (nodejs_eventloop_lag_p99_seconds{${svc}})`,
            '{{service}} {{instance}}',
          ),
        ],
      },
      {
        title: 'Memory (RSS and heap used)',
        description: 'Resident set size and V8 heap used, per instance.',
        unit: units.BytesIEC,
        width: 6,
        queries: [
          q(
            `sum by (service, instance) (process_resident_memory_bytes{${svc}})`,
            '{{service}} {{instance}} RSS',
          ),
          q(
            `sum by (service, instance) (nodejs_heap_size_used_bytes{${svc}})`,
            '{{service}} {{instance}} heap used',
          ),
        ],
      },
      {
        title: 'CPU usage',
        description: 'CPU time per second, per instance (1 = one full core).',
        unit: units.PercentUnit,
        width: 6,
        queries: [
          q(
            `sum by (service, instance) (${rate(`process_cpu_seconds_total{${svc}}`)})`,
            '{{service}} {{instance}}',
          ),
        ],
      },
      {
        title: 'Scrape targets up',
        description:
          'Instances Prometheus scrapes successfully, of those it knows. Alert: ToolDirectoryTargetDown.',
        unit: units.Short,
        width: 6,
        queries: [
          q('sum by (job) (up{job=~"tool-directory-$service"})', '{{job}} up'),
          q('count by (job) (up{job=~"tool-directory-$service"})', '{{job}} known'),
        ],
      },
    ],
  },
];

const PANEL_HEIGHT = 8;

function timeseriesPanel(spec: PanelSpec, id: number): timeseries.PanelBuilder {
  const panel = new timeseries.PanelBuilder()
    .id(id)
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .height(PANEL_HEIGHT)
    .span(spec.width)
    .unit(spec.unit)
    .min(0)
    .colorScheme(new dashboard.FieldColorBuilder().mode(dashboard.FieldColorModeId.PaletteClassic))
    .drawStyle(common.GraphDrawStyle.Line)
    .lineWidth(1)
    .fillOpacity(10)
    .showPoints(common.VisibilityMode.Never)
    .legend(
      new common.VizLegendOptionsBuilder()
        .displayMode(common.LegendDisplayMode.Table)
        .placement(common.LegendPlacement.Bottom)
        .showLegend(true)
        .calcs(['mean', 'max']),
    )
    .tooltip(
      new common.VizTooltipOptionsBuilder()
        .mode(common.TooltipDisplayMode.Multi)
        .sort(common.SortOrder.Descending),
    );
  if (spec.max !== undefined) panel.max(spec.max);
  spec.queries.forEach((query, i) =>
    panel.withTarget(
      new prometheus.DataqueryBuilder()
        .refId(String.fromCharCode(65 + i))
        .datasource(DATASOURCE)
        .expr(query.expr)
        .legendFormat(query.legend)
        .range(),
    ),
  );
  return panel;
}

/**
 * The classic dashboard model (the SDK's DashboardBuilder, which it marks deprecated in favour
 * of dashboardv2): that is the JSON Grafana's file provisioning and the chart's dashboard
 * sidecar load. The builder lays rows out top to bottom and their panels left to right; it
 * starts a new line once 24 columns are filled but never wraps a panel too wide for what is left
 * of its line (the dashboard test's grid check fails on such a panel).
 */
export function buildDashboard(): dashboard.Dashboard {
  const builder = new dashboard.DashboardBuilder('Tool Directory')
    .uid('tool-directory')
    .description(
      'Gateway and catalog: traffic, errors, latency, quotas, upstream, response cache, Redis, store, runtime. Generated by scripts/generate-dashboard.ts.',
    )
    .tags(['tool-directory'])
    .version(1)
    .editable()
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .timezone('utc')
    .time({ from: 'now-3h', to: 'now' })
    .refresh('30s')
    .annotation(
      new dashboard.AnnotationQueryBuilder()
        .name('Annotations & Alerts')
        .datasource({ type: 'grafana', uid: '-- Grafana --' })
        .type('dashboard')
        .builtIn(1)
        .enable(true)
        .hide(true)
        .iconColor('rgba(0, 211, 255, 1)'),
    )
    .withVariable(
      new dashboard.DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'),
    )
    .withVariable(
      new dashboard.QueryVariableBuilder('service')
        .label('Service')
        .datasource(DATASOURCE)
        .query('label_values(http_requests_total, service)')
        .definition('label_values(http_requests_total, service)')
        .current({ selected: true, text: ['All'], value: ['$__all'] })
        .includeAll(true)
        .multi(true)
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .sort(dashboard.VariableSort.AlphabeticalAsc),
    );
  let id = 1;
  for (const row of ROWS) {
    builder.withRow(new dashboard.RowBuilder(row.title).id(id++));
    for (const spec of row.panels) builder.withPanel(timeseriesPanel(spec, id++));
  }
  return builder.build();
}

/** The dashboard exactly as committed: two-space JSON and a final newline. */
export function renderDashboard(): string {
  return `${JSON.stringify(buildDashboard(), null, 2)}\n`;
}

if (require.main === module) {
  const file = resolve(__dirname, '..', DASHBOARD_FILE);
  const json = renderDashboard();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      // a missing file is out of date
    }
    if (current !== json) {
      console.error(`${DASHBOARD_FILE} is out of date: run npx tsx scripts/generate-dashboard.ts`);
      process.exit(1);
    }
    console.log(`${DASHBOARD_FILE} is up to date`);
  } else {
    writeFileSync(file, json);
    console.log(`wrote ${DASHBOARD_FILE}`);
  }
}
