import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ConfigMap,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from 'kubernetes-models/v1';
import { parse } from 'yaml';
import { HTTPRoute } from './gateway-api-schema';
import { chartDir, type Manifest, render, scenarios } from './helm';
import { hasStrictType, unknownFields } from './strict-fields';

/**
 * Every rendered manifest against the Kubernetes OpenAPI schemas (kubernetes-models
 * validators), plus an unknown-field check; the Gateway API HTTPRoute against its CRD's schema
 * (gateway-api-schema.ts). The Prometheus Operator kinds have no validator here and are
 * checked structurally.
 */

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

const VALIDATORS: Record<string, ModelClass> = {
  'v1/ConfigMap': ConfigMap,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'v1/Pod': Pod,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'gateway.networking.k8s.io/v1/HTTPRoute': HTTPRoute,
};

/** Custom resources without a kubernetes-models validator: checked below instead. */
const CUSTOM_KINDS = new Set(['monitoring.coreos.com/v1/ServiceMonitor', 'monitoring.coreos.com/v1/PrometheusRule']);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function asRecord(value: unknown): Record<string, unknown> {
  expect(value !== null && typeof value === 'object' && !Array.isArray(value)).toBe(true);
  return value as Record<string, unknown>;
}

function checkServiceMonitor(m: Manifest, all: Manifest[]): void {
  const spec = asRecord(m.spec);
  const endpoints = spec.endpoints as Array<Record<string, unknown>>;
  expect(Array.isArray(endpoints) && endpoints.length > 0).toBe(true);
  const selector = asRecord(asRecord(spec.selector).matchLabels);
  const services = all.filter(
    (s) =>
      s.kind === 'Service' &&
      Object.entries(selector).every(([k, v]) => s.metadata.labels?.[k] === v),
  );
  // Both services, and the webhook worker's metrics-only Service when it is on.
  const components = services.map((s) => s.metadata.labels?.['app.kubernetes.io/component']);
  expect(components).toEqual(expect.arrayContaining(['catalog', 'gateway']));
  const expressions = asRecord(spec.selector).matchExpressions as Array<{ values: string[] }>;
  for (const component of components) expect(expressions[0]?.values).toContain(component);
  for (const endpoint of endpoints) {
    expect(endpoint.path).toBe('/metrics');
    expect(endpoint.interval).toMatch(/^[0-9]+(ms|s|m|h)$/);
    // Every selected Service has the named port.
    for (const service of services) {
      const ports = asRecord(service.spec).ports as Array<{ name: string }>;
      expect(ports.map((p) => p.name)).toContain(endpoint.port);
    }
  }
}

function checkPrometheusRule(m: Manifest): void {
  const groups = asRecord(m.spec).groups as Array<{ name: string; rules: Array<Record<string, unknown>> }>;
  expect(Array.isArray(groups) && groups.length > 0).toBe(true);
  for (const group of groups) {
    expect(typeof group.name).toBe('string');
    expect(group.rules.length).toBeGreaterThan(0);
    for (const rule of group.rules) {
      expect(typeof (rule.alert ?? rule.record)).toBe('string');
      expect(typeof rule.expr).toBe('string');
    }
  }
  // The rules are files/alerts.yml (the same file docker-compose's Prometheus loads), but for
  // the runbook links: "docs/<page>#<alert>" there, an absolute URL ending in "<page>#<alert>" here.
  const file = parse(readFileSync(path.join(chartDir, 'files/alerts.yml'), 'utf8')) as { groups: typeof groups };
  const runbooks = (g: typeof groups) =>
    g.flatMap((group) => group.rules.map((rule) => (rule.annotations as Record<string, string> | undefined)?.runbook_url));
  const withoutRunbooks = (g: typeof groups): unknown =>
    JSON.parse(JSON.stringify(g).replace(/"runbook_url":"[^"]*"/g, '"runbook_url":""'));
  expect(withoutRunbooks(groups)).toEqual(withoutRunbooks(file.groups));
  const rendered = runbooks(groups);
  runbooks(file.groups).forEach((relative, i) => {
    if (relative === undefined) return expect(rendered[i]).toBeUndefined();
    expect(rendered[i]).toMatch(/^https:\/\/[^#]+#/);
    expect(rendered[i]?.endsWith(`/${relative.replace(/^docs\//, '')}`)).toBe(true);
  });
}

describe.each(Object.entries(scenarios))('rendered with %s values', (_name, options) => {
  let manifests: Manifest[] = [];

  beforeAll(() => {
    manifests = render(options);
  });

  test('renders manifests of known kinds, with valid names and no duplicates', () => {
    expect(manifests.length).toBeGreaterThan(5);
    const seen = new Set<string>();
    for (const m of manifests) {
      const key = `${m.apiVersion}/${m.kind}`;
      expect([key, key in VALIDATORS || CUSTOM_KINDS.has(key)]).toEqual([key, true]);
      expect(m.metadata.name).toMatch(DNS_LABEL);
      expect(m.metadata.name.length).toBeLessThanOrEqual(63);
      const id = `${m.kind}/${m.metadata.name}`;
      expect(seen.has(id)).toBe(false);
      seen.add(id);
    }
  });

  test('every manifest validates against the Kubernetes schema', () => {
    const failures: string[] = [];
    for (const m of manifests) {
      const Model = VALIDATORS[`${m.apiVersion}/${m.kind}`];
      if (!Model) continue;
      try {
        new Model(m as never).validate();
      } catch (err) {
        failures.push(`${m.kind}/${m.metadata.name}: ${(err as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test('no manifest has a field unknown to Kubernetes (strict validation)', () => {
    const failures: string[] = [];
    for (const m of manifests) {
      if (!hasStrictType(m.apiVersion, m.kind)) continue;
      for (const field of unknownFields(m)) failures.push(`${m.kind}/${m.metadata.name}: ${field}`);
    }
    expect(failures).toEqual([]);
  });

  test('Prometheus Operator resources are well-formed', () => {
    for (const m of manifests) {
      if (m.kind === 'ServiceMonitor') checkServiceMonitor(m, manifests);
      if (m.kind === 'PrometheusRule') checkPrometheusRule(m);
    }
  });
});

test('the HTTPRoute schema refuses a wrong value and an unknown field (the check is not vacuous)', () => {
  const route = (spec: Record<string, unknown>) =>
    new HTTPRoute({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'r' }, spec });
  const parentRefs = [{ name: 'public' }];
  const rule = { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: 'gw', port: 8080 }] };
  expect(() => route({ parentRefs, rules: [rule] }).validate()).not.toThrow();
  expect(() =>
    route({ parentRefs, rules: [{ ...rule, matches: [{ path: { type: 'Prefix', value: '/' } }] }] }).validate(),
  ).toThrow(/allowedValues/);
  expect(() => route({ parentRefs, rules: [{ ...rule, backendRefs: [{ name: 'gw', port: 70000 }] }] }).validate()).toThrow(
    /port/,
  );
  expect(() => route({ parentRefs, hostname: ['a.example.com'], rules: [rule] }).validate()).toThrow(/hostname/);
});

test('the validators do reject an invalid manifest (the check is not vacuous)', () => {
  const broken = new Deployment({
    metadata: { name: 'x' },
    spec: {
      selector: {},
      template: { spec: { containers: [{ name: 'c', ports: [{ containerPort: 'http' }] }] } },
    },
  } as never);
  expect(() => broken.validate()).toThrow(/containerPort/);
  expect(
    unknownFields({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      spec: { template: { spec: { containers: [{ name: 'c', readinesProbe: {} }] } } },
    } as never),
  ).toEqual(['spec.template.spec.containers[0].readinesProbe']);
});
