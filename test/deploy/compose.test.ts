import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { parse } from 'yaml';
import { type Manifest, ofKind, render, repoRoot } from '../helm/helm';

/**
 * deploy/docker-compose.yml is the local twin of the Helm chart: the same services, ports,
 * environment variable names and defaults, and the same Prometheus job names, alert rules and
 * dashboard. This keeps the two from drifting apart.
 */

const deployDir = path.join(repoRoot, 'deploy');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string; target?: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  user?: string;
  read_only?: boolean;
  cap_drop?: string[];
}

interface Compose {
  services: Record<string, ComposeService>;
}

const compose = parse(readFileSync(path.join(deployDir, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as Compose;

function service(name: string): ComposeService {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
}

/** Environment as a container sees it: ${VAR:-default} resolved to its default. */
function env(name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service(name).environment ?? {}).map(([k, v]) => [
      k,
      String(v).replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1'),
    ]),
  );
}

/** A volume's host side, resolved against deploy/ as compose does. */
function mount(serviceName: string, target: string): string {
  const volume = (service(serviceName).volumes ?? []).find((v) => v.split(':')[1] === target);
  if (!volume) throw new Error(`${serviceName} mounts nothing at ${target}`);
  return path.resolve(deployDir, volume.split(':')[0] ?? '');
}

/** The chart's environment per component: ConfigMap entries plus env, by variable name. */
function chartEnv(manifests: Manifest[], component: string): Record<string, string | undefined> {
  const deployment = ofKind<IDeployment>(manifests, 'Deployment').find(
    (d) => d.metadata?.labels?.['app.kubernetes.io/component'] === component,
  );
  const container = deployment?.spec?.template.spec?.containers[0];
  if (!container) throw new Error(`chart has no ${component} Deployment`);
  const result: Record<string, string | undefined> = {};
  for (const source of container.envFrom ?? []) {
    const cm = ofKind<IConfigMap>(manifests, 'ConfigMap').find(
      (c) => c.metadata?.name === source.configMapRef?.name,
    );
    Object.assign(result, cm?.data ?? {});
  }
  for (const e of container.env ?? []) result[e.name] = e.value;
  return result;
}

let chart: Manifest[] = [];

beforeAll(() => {
  // The chart with the same backends the compose stack runs: MongoDB, Redis, OTLP tracing.
  chart = render({
    set: [
      'externalMongodb.url=mongodb://mongodb:27017',
      'externalRedis.url=redis://redis:6379',
      'secrets.internalToken=local-dev-internal-token-0123456789',
      'tracing.enabled=true',
      'tracing.endpoint=http://jaeger:4318',
      'gateway.config.publicUrl=http://localhost:8080',
      'serviceMonitor.enabled=true',
    ],
  });
});

test('runs the whole stack with pinned images', () => {
  expect(Object.keys(compose.services).sort()).toEqual(
    ['catalog', 'gateway', 'grafana', 'jaeger', 'mongodb', 'prometheus', 'redis', 'seed'].sort(),
  );
  for (const [name, s] of Object.entries(compose.services)) {
    expect([name, s.image]).toEqual([
      name,
      expect.stringMatching(/^[^\s:]+(\/[^\s:]+)*:[\w][\w.-]*$/),
    ]);
    expect([name, s.image]).toEqual([name, expect.not.stringMatching(/:latest$/)]);
  }
  // The repository's one Dockerfile (compose's default name), one target per image; the seed
  // runs the catalog image.
  for (const [name, target] of [
    ['gateway', 'gateway'],
    ['catalog', 'catalog'],
    ['seed', 'catalog'],
  ] as const) {
    const build = service(name).build;
    expect([name, build]).toEqual([name, { context: '..', target }]);
    expect(existsSync(path.resolve(deployDir, build?.context ?? '', 'Dockerfile'))).toBe(true);
    expect([name, service(name).image]).toEqual([name, `tool-directory/${target}:1.0.0`]);
  }
});

test.each(['gateway', 'catalog'])(
  '%s uses the same variable names and defaults as the chart',
  (name) => {
    const fromChart = chartEnv(chart, name);
    const local = env(name);
    // Same names; the chart may also set TRUST_PROXY (empty by default there).
    expect(Object.keys(local).sort()).toEqual(
      Object.keys(fromChart)
        .filter((k) => k !== 'TRUST_PROXY')
        .sort(),
    );
    // Same values, except where the address of a dependency or a secret is necessarily local.
    const differs = new Set([
      'CATALOG_URL',
      'MONGODB_URI',
      'REDIS_URL',
      'INTERNAL_TOKEN',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ]);
    for (const [key, value] of Object.entries(fromChart)) {
      if (differs.has(key) || value === undefined || !(key in local)) continue;
      expect([key, local[key]]).toEqual([key, value]);
    }
  },
);

test('ports match the chart defaults: 8080/9464 gateway, 8081/9465 catalog, only the gateway published', () => {
  expect(env('gateway')).toMatchObject({ PORT: '8080', METRICS_PORT: '9464' });
  expect(env('catalog')).toMatchObject({ CATALOG_PORT: '8081', METRICS_PORT: '9465' });
  const values = parse(
    readFileSync(path.join(repoRoot, 'helm/tool-directory/values.yaml'), 'utf8'),
  ) as {
    gateway: { port: number; metricsPort: number };
    catalog: { port: number; metricsPort: number };
  };
  expect([
    values.gateway.port,
    values.gateway.metricsPort,
    values.catalog.port,
    values.catalog.metricsPort,
  ]).toEqual([8080, 9464, 8081, 9465]);
  expect(service('gateway').ports).toEqual(['8080:8080']);
  expect(service('gateway').expose).toEqual(['9464']);
  expect(service('catalog').ports).toBeUndefined();
  expect(service('catalog').expose?.sort()).toEqual(['8081', '9465']);
  const catalogUrl = new URL(env('gateway').CATALOG_URL ?? '');
  expect([catalogUrl.hostname, catalogUrl.port]).toEqual(['catalog', env('catalog').CATALOG_PORT]);
});

test('gateway and catalog share INTERNAL_TOKEN and run hardened like in the chart', () => {
  expect(env('gateway').INTERNAL_TOKEN).toBe(env('catalog').INTERNAL_TOKEN);
  expect((env('gateway').INTERNAL_TOKEN ?? '').length).toBeGreaterThanOrEqual(16);
  for (const name of ['gateway', 'catalog']) {
    const s = service(name);
    expect(s.read_only).toBe(true);
    expect(s.user).toMatch(/^[1-9][0-9]*:[0-9]+$/);
    expect(s.cap_drop).toEqual(['ALL']);
  }
});

test('the seed service loads MongoDB before the catalog starts, like the chart hook', () => {
  const seed = service('seed');
  expect(seed.command).toEqual(['tool-directory', 'seed']);
  expect(seed.image).toBe(service('catalog').image);
  expect(env('seed').MONGODB_URI).toBe(env('catalog').MONGODB_URI);
  expect(env('seed').MONGODB_DB).toBe(env('catalog').MONGODB_DB);
  expect(seed.depends_on?.mongodb?.condition).toBe('service_healthy');
  expect(service('catalog').depends_on?.seed?.condition).toBe('service_completed_successfully');
});

test("Prometheus scrapes both metrics ports under the chart's job names and loads the alert rules", () => {
  const config = parse(readFileSync(path.join(deployDir, 'prometheus/prometheus.yml'), 'utf8')) as {
    rule_files: string[];
    scrape_configs: Array<{
      job_name: string;
      static_configs: Array<{ targets: string[]; labels?: Record<string, string> }>;
    }>;
  };
  const targets = Object.fromEntries(
    config.scrape_configs.map((j) => [j.job_name, j.static_configs.flatMap((s) => s.targets)]),
  );
  expect(targets['tool-directory-gateway']).toEqual([`gateway:${env('gateway').METRICS_PORT}`]);
  expect(targets['tool-directory-catalog']).toEqual([`catalog:${env('catalog').METRICS_PORT}`]);
  // The ServiceMonitor gives the same job names in a cluster.
  const monitor = ofKind(chart, 'ServiceMonitor')[0] as Manifest;
  expect(JSON.stringify(monitor.spec)).toContain('"replacement":"tool-directory-$1"');

  const mounted = (service('prometheus').volumes ?? []).map((v) => v.split(':')[1]);
  for (const file of config.rule_files) expect(mounted).toContain(file);
  const rulesTarget = config.rule_files[0] ?? '';
  expect(mount('prometheus', rulesTarget)).toBe(
    path.join(repoRoot, 'helm/tool-directory/files/alerts.yml'),
  );
  expect(mount('prometheus', '/etc/prometheus/prometheus.yml')).toBe(
    path.join(deployDir, 'prometheus/prometheus.yml'),
  );
});

test("Grafana is provisioned with Prometheus and the chart's dashboards", () => {
  const provisioning = mount('grafana', '/etc/grafana/provisioning');
  const datasources = parse(
    readFileSync(path.join(provisioning, 'datasources/prometheus.yml'), 'utf8'),
  ) as {
    datasources: Array<{ type: string; url: string }>;
  };
  expect(datasources.datasources.find((d) => d.type === 'prometheus')?.url).toBe(
    'http://prometheus:9090',
  );
  const providers = parse(
    readFileSync(path.join(provisioning, 'dashboards/tool-directory.yml'), 'utf8'),
  ) as {
    providers: Array<{ options: { path: string } }>;
  };
  const dashboardsPath = providers.providers[0]?.options.path ?? '';
  const dashboardsDir = mount('grafana', dashboardsPath);
  expect(dashboardsDir).toBe(path.join(repoRoot, 'helm/tool-directory/files/dashboards'));
  expect(readdirSync(dashboardsDir).filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0);
});

test('both services send traces to Jaeger over OTLP/HTTP', () => {
  for (const name of ['gateway', 'catalog']) {
    expect(env(name)).toMatchObject({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318',
      OTEL_SERVICE_NAME: `tool-directory-${name}`,
    });
  }
  expect(env('jaeger').COLLECTOR_OTLP_ENABLED).toBe('true');
  expect(service('jaeger').expose).toContain('4318');
});
