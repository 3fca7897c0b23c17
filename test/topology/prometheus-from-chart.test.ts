import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { Manifest } from '../helm/helm';
import {
  type Pod,
  renderTopology,
  ruleGroups,
  scrapeConfigs,
  workloads,
} from './prometheus-from-chart';

/**
 * The translation of the rendered chart for the topology test's Prometheus: what it makes of the
 * ServiceMonitor and PrometheusRule, checked by promtool, and its refusal of what it does not
 * know. The topology test shows the result at work.
 */
const manifests = renderTopology();
const pods: Pod[] = workloads(manifests).flatMap((w) =>
  Array.from({ length: w.replicas }, (_, i) => ({
    deployment: w.name,
    name: `${w.name}-${i + 1}`,
    ports: { http: 20_000 + i * 2, metrics: 20_001 + i * 2 },
  })),
);

function promtool(args: string[], files: Record<string, string>) {
  const dir = mkdtempSync(path.join(tmpdir(), 'td-promtool-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    return spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the production values run two gateways, two catalogs and the webhook worker', () => {
  const found = Object.fromEntries(workloads(manifests).map((w) => [w.component, w.replicas]));
  expect(found).toEqual({ gateway: 2, catalog: 2, 'webhook-worker': 1 });
  const worker = workloads(manifests).find((w) => w.component === 'webhook-worker')!;
  expect(worker.env.WEBHOOK_WORKER).toBe('only');
});

test("the ServiceMonitor becomes a scrape config promtool accepts, with the chart's settings", () => {
  const configs = scrapeConfigs(manifests, pods);
  expect(configs).toHaveLength(1);
  const [config] = configs as [Record<string, any>]; // eslint-disable-line @typescript-eslint/no-explicit-any
  expect(config).toMatchObject({
    scrape_interval: '1s',
    scrape_timeout: '1s',
    metrics_path: '/metrics',
    honor_labels: false,
  });
  // Every Service port of every pod is discovered; the relabelings keep the metrics port.
  const ports = config.static_configs.map(
    (t: { labels: Record<string, string> }) => t.labels.__meta_kubernetes_endpoint_port_name,
  );
  expect(ports.filter((p: string) => p === 'metrics')).toHaveLength(pods.length);
  expect(ports).toContain('http');
  expect(config.relabel_configs).toContainEqual({
    action: 'keep',
    source_labels: ['__meta_kubernetes_endpoint_port_name'],
    regex: 'metrics',
  });
  expect(config.relabel_configs).toContainEqual({
    source_labels: ['__meta_kubernetes_service_label_app_kubernetes_io_component'],
    target_label: 'job',
    replacement: 'tool-directory-$1',
  });
  const checked = promtool(['check', 'config', 'prometheus.yml'], {
    'prometheus.yml': stringify({ scrape_configs: configs }),
  });
  expect(checked.stderr + checked.stdout).toMatch(/SUCCESS/);
  expect(checked.status).toBe(0);
});

test("the PrometheusRule becomes a rule file promtool accepts, every alert's for: 5 s", () => {
  const groups = ruleGroups(manifests);
  const alerts = groups.flatMap((g) => g.rules).filter((r) => r.alert);
  expect(alerts.length).toBeGreaterThan(10);
  for (const alert of alerts) expect(alert.for).toBe('5s');
  const checked = promtool(['check', 'rules', 'rules.yml'], {
    'rules.yml': stringify({ groups }),
  });
  expect(checked.stdout).toMatch(/SUCCESS/);
  expect(checked.status).toBe(0);
});

describe('a ServiceMonitor the translation does not know fails it', () => {
  const withEndpoint = (change: (endpoint: Record<string, unknown>) => void): Manifest[] =>
    manifests.map((m) => {
      if (m.kind !== 'ServiceMonitor') return m;
      const copy = structuredClone(m);
      change((copy.spec as { endpoints: Record<string, unknown>[] }).endpoints[0]!);
      return copy;
    });

  test('an endpoint field', () => {
    const changed = withEndpoint((e) => (e.bearerTokenFile = '/var/run/token'));
    expect(() => scrapeConfigs(changed, pods)).toThrow(/bearerTokenFile is not translated/);
  });

  test('a relabeling field', () => {
    const changed = withEndpoint((e) => {
      (e.relabelings as Record<string, unknown>[])[0]!.unknownField = 'x';
    });
    expect(() => scrapeConfigs(changed, pods)).toThrow(/unknownField is not translated/);
  });

  test('a Service port that no container port serves', () => {
    const noMetrics = pods.map((p) => ({ ...p, ports: { http: p.ports.http! } }));
    expect(() => scrapeConfigs(manifests, noMetrics)).toThrow(/port metrics has no port of pod/);
  });
});
