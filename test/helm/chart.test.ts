import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IIngress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPod } from 'kubernetes-models/v1/Pod';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IService } from 'kubernetes-models/v1/Service';
import { parse } from 'yaml';
import { loadGatewayConfig } from '../../services/gateway/src/config';
import { readScanningKeys } from '../../services/gateway/src/leaks/scanning-keys';
import { tracingSettings } from '../../services/shared/telemetry';
import {
  chartDir,
  configOf,
  deploymentOf,
  failure,
  helm,
  mainContainer,
  type Manifest,
  named,
  ofKind,
  productionValues,
  render,
  type RenderOptions,
  scenarios,
  secretScanningKeys,
  TOKEN,
} from './helm';

/** Chart properties the platform relies on, asserted over `helm template` output. */

const RELEASE = 'tool-directory'; // release name == chart name: resources are "tool-directory-*"
const GATEWAY = `${RELEASE}-gateway`;
const CATALOG = `${RELEASE}-catalog`;
const APP_GRACE_SECONDS = 25; // the services' shutdown grace after SHUTDOWN_DELAY_MS

interface HTTPRouteManifest extends Manifest {
  spec: {
    parentRefs: Array<Record<string, unknown>>;
    hostnames?: string[];
    rules: unknown[];
  };
}

interface PodOwner {
  owner: string;
  spec: IPodSpec;
  annotations: Record<string, string>;
}

/** The pod specs of every workload: Deployments, Jobs and bare Pods (the helm test). */
function podSpecs(manifests: Manifest[]): PodOwner[] {
  const result: PodOwner[] = [];
  for (const m of manifests) {
    if (m.kind === 'Deployment' || m.kind === 'Job') {
      const template = (m as unknown as IDeployment | IJob).spec?.template;
      if (template?.spec) {
        result.push({
          owner: `${m.kind}/${m.metadata.name}`,
          spec: template.spec,
          annotations: template.metadata?.annotations ?? {},
        });
      }
    } else if (m.kind === 'Pod') {
      const pod = m as unknown as IPod;
      if (pod.spec) result.push({ owner: `Pod/${m.metadata.name}`, spec: pod.spec, annotations: {} });
    }
  }
  return result;
}

function containersOf(spec: IPodSpec): IContainer[] {
  return [...(spec.initContainers ?? []), ...spec.containers];
}

function deployment(manifests: Manifest[], name: string): IDeployment {
  return named<IDeployment>(manifests, 'Deployment', name);
}

const configs: Array<[string, RenderOptions]> = [
  ['embedded', scenarios.embedded ?? {}],
  ['production', scenarios.production ?? {}],
];
const rendered = new Map<string, Manifest[]>();

beforeAll(() => {
  for (const [name, options] of Object.entries(scenarios)) rendered.set(name, render(options));
});

function manifestsOf(name: string): Manifest[] {
  const manifests = rendered.get(name);
  if (!manifests) throw new Error(`scenario ${name} was not rendered`);
  return manifests;
}

describe('helm lint --strict', () => {
  const lintArgs = (options: RenderOptions): string[] => [
    ...(options.valuesFiles ?? []).flatMap((file) => ['--values', file]),
    ...(options.set ?? []).flatMap((expr) => ['--set', expr]),
    ...(options.setFile ?? []).flatMap((expr) => ['--set-file', expr]),
  ];
  test.each(Object.entries(scenarios))('passes with %s values', (_name, options) => {
    const result = helm(['lint', '--strict', chartDir, ...lintArgs(options)]);
    expect(`${result.stdout}${result.stderr}`).toContain('0 chart(s) failed');
    expect(result.status).toBe(0);
  });
});

describe('values.schema.json', () => {
  test('closes every object with additionalProperties: false (maps declare their value type)', () => {
    const schema: unknown = JSON.parse(readFileSync(path.join(chartDir, 'values.schema.json'), 'utf8'));
    const open: string[] = [];
    const visit = (node: unknown, at: string): void => {
      if (node === null || typeof node !== 'object') return;
      if (Array.isArray(node)) {
        node.forEach((n, i) => visit(n, `${at}[${i}]`));
        return;
      }
      const record = node as Record<string, unknown>;
      const isObject = record.type === 'object' || 'properties' in record;
      if (isObject) {
        const ap = record.additionalProperties;
        const closed = 'properties' in record ? ap === false : typeof ap === 'object' && ap !== null;
        if (!closed) open.push(at || '(root)');
      }
      for (const [key, child] of Object.entries(record)) visit(child, `${at}/${key}`);
    };
    visit(schema, '');
    expect(open).toEqual([]);
  });

  test.each([
    ['a top-level key the chart does not have', ['replicaCount=2']],
    ['a misspelt nested key', ['gateway.replicaCont=2']],
    ['a misspelt resources key', ['catalog.resources.limits.memroy=1Gi']],
    ['an image tagged latest', ['gateway.image.tag=latest']],
    ['a wrong type', ['gateway.port=http']],
    ['an unknown log level', ['config.logLevel=verbose']],
    ['a too-short INTERNAL_TOKEN', ['secrets.internalToken=short']],
    ['a too-short ADMIN_TOKEN', ['catalog.adminToken=short']],
    ['a 1.x backend key (mongodb.enabled is now externalMongodb)', ['mongodb.enabled=true']],
    ['a MongoDB URL of another scheme', ['externalMongodb.url=postgres://db']],
    ['a response-cache switch other than on/off', ['gateway.config.responseCache=auto']],
    ['a negative response-cache size', ['gateway.config.responseCacheMaxBytes=-1']],
    ['no leak reports at all (0 a minute)', ['gateway.config.leakReportsPerMinute=0']],
    ['a ConfigMap key with a slash', ['gateway.secretScanning.existingConfigMapKey=keys/github.json']],
  ])('rejects %s', (_name, set) => {
    expect(failure({ set })).toMatch(/values don't meet the specifications of the schema/);
  });

  test('rejects a typo in a values file', () => {
    const stderr = failure({ valuesFiles: [path.join(__dirname, 'fixtures/typo-values.yaml')] });
    expect(stderr).toMatch(/ingres/);
  });
});

describe.each(Object.keys(scenarios))('workloads rendered with %s values', (name) => {
  test('every container has resources, the hardened securityContext and a pinned image', () => {
    const pods = podSpecs(manifestsOf(name));
    expect(pods.length).toBeGreaterThanOrEqual(3);
    for (const { owner, spec } of pods) {
      expect([owner, spec.automountServiceAccountToken]).toEqual([owner, false]);
      expect([owner, spec.securityContext?.runAsNonRoot]).toEqual([owner, true]);
      for (const c of containersOf(spec)) {
        const where = `${owner} container ${c.name}`;
        expect([where, c.resources?.requests?.cpu, c.resources?.requests?.memory]).toEqual([
          where,
          expect.anything(),
          expect.anything(),
        ]);
        expect([where, c.resources?.limits?.memory]).toEqual([where, expect.anything()]);
        const sc = c.securityContext ?? {};
        expect([where, sc.runAsNonRoot, sc.readOnlyRootFilesystem, sc.allowPrivilegeEscalation]).toEqual([
          where,
          true,
          true,
          false,
        ]);
        expect([where, sc.capabilities?.drop]).toEqual([where, ['ALL']]);
        expect([where, sc.capabilities?.add ?? []]).toEqual([where, []]);
        expect([where, (sc.seccompProfile ?? spec.securityContext?.seccompProfile)?.type]).toEqual([
          where,
          'RuntimeDefault',
        ]);
        // A read-only root filesystem needs a writable /tmp.
        const tmp = c.volumeMounts?.find((v) => v.mountPath === '/tmp');
        const volume = spec.volumes?.find((v) => v.name === tmp?.name);
        expect([where, volume?.emptyDir]).toEqual([where, expect.anything()]);
        // name:tag (a registry port is not a tag), never latest, no digest-less bare name.
        const image = c.image ?? '';
        expect([where, image]).toEqual([where, expect.stringMatching(/^[^\s]+:[\w][\w.-]{0,127}$/)]);
        expect([where, image.slice(image.lastIndexOf('/') + 1)]).toEqual([where, expect.stringContaining(':')]);
        expect([where, image]).toEqual([where, expect.not.stringMatching(/:latest$/)]);
      }
    }
  });

  test('the services have probes, a preStop sleep and a grace period covering the shutdown', () => {
    const manifests = manifestsOf(name);
    for (const d of ofKind<IDeployment>(manifests, 'Deployment')) {
      const spec = d.spec?.template.spec;
      const c = mainContainer(d);
      expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
      expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
      expect(c.startupProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
      const preStop = c.lifecycle?.preStop;
      const sleepSeconds =
        preStop?.sleep?.seconds ?? Number(preStop?.exec?.command?.[0] === 'sleep' ? preStop.exec.command[1] : NaN);
      expect(sleepSeconds).toBeGreaterThan(0);
      const component = d.metadata?.labels?.['app.kubernetes.io/component'];
      const config = configOf(manifests, c.envFrom?.[0]?.configMapRef?.name ?? '');
      expect(config).toHaveProperty('SHUTDOWN_DELAY_MS');
      const delaySeconds = Number(config.SHUTDOWN_DELAY_MS) / 1000;
      expect([component, spec?.terminationGracePeriodSeconds]).toEqual([
        component,
        expect.any(Number),
      ]);
      expect(spec?.terminationGracePeriodSeconds).toBeGreaterThan(sleepSeconds + delaySeconds + APP_GRACE_SECONDS);
      // The http and metrics ports are the ones the service's configuration listens on.
      const ports = Object.fromEntries((c.ports ?? []).map((p) => [p.name, p.containerPort]));
      const portKey = component === 'gateway' ? 'PORT' : 'CATALOG_PORT';
      expect(ports).toEqual({ http: Number(config[portKey]), metrics: Number(config.METRICS_PORT) });
      expect(d.spec?.template.metadata?.annotations).toMatchObject({
        'checksum/config': expect.stringMatching(/^[0-9a-f]{64}$/),
        'checksum/secret': expect.stringMatching(/^[0-9a-f]{64}$/),
      });
    }
  });

  test('Services route to the Deployments\' pods and named ports', () => {
    const manifests = manifestsOf(name);
    for (const svc of ofKind<IService>(manifests, 'Service')) {
      const d = deployment(manifests, svc.metadata?.name ?? '');
      expect(d.spec?.selector.matchLabels).toEqual(svc.spec?.selector);
      const labels = d.spec?.template.metadata?.labels ?? {};
      expect(labels).toMatchObject(svc.spec?.selector ?? {});
      const containerPorts = (mainContainer(d).ports ?? []).map((p) => p.name);
      for (const port of svc.spec?.ports ?? []) expect(containerPorts).toContain(port.targetPort);
    }
  });

  test('a NetworkPolicy lets only the gateway reach the catalog, and monitoring the metrics', () => {
    const manifests = manifestsOf(name);
    const policies = ofKind<INetworkPolicy>(manifests, 'NetworkPolicy');
    const catalogPods = deploymentOf(manifests, 'catalog').spec?.template.metadata?.labels ?? {};
    const gatewayPods = deploymentOf(manifests, 'gateway').spec?.template.metadata?.labels ?? {};
    const selects = (policy: INetworkPolicy, pods: Record<string, string>): boolean =>
      Object.entries(policy.spec?.podSelector.matchLabels ?? {}).every(([k, v]) => pods[k] === v);

    const forCatalog = policies.filter((p) => selects(p, catalogPods));
    expect(forCatalog).toHaveLength(1);
    const policy = forCatalog[0] as INetworkPolicy;
    expect(policy.spec?.policyTypes).toContain('Ingress');
    const rules = policy.spec?.ingress ?? [];
    const httpRules = rules.filter((r) => !r.ports || r.ports.some((p) => p.port === 'http' || p.port === 8081));
    expect(httpRules).toHaveLength(1);
    const peers = httpRules[0]?.from ?? [];
    expect(peers).toHaveLength(1);
    expect(peers[0]?.namespaceSelector).toBeUndefined();
    expect(peers[0]?.ipBlock).toBeUndefined();
    const peerLabels = peers[0]?.podSelector?.matchLabels ?? {};
    expect(Object.keys(peerLabels).length).toBeGreaterThan(0);
    expect(Object.entries(peerLabels).every(([k, v]) => gatewayPods[k] === v)).toBe(true);
    expect(Object.entries(peerLabels).every(([k, v]) => catalogPods[k] === v)).toBe(false);
    // Every rule names its ports: nothing else is open.
    for (const rule of rules) expect(rule.ports?.length).toBeGreaterThan(0);

    // Metrics ports on both services only from the monitoring namespace.
    for (const p of policies) {
      const metricsRules = (p.spec?.ingress ?? []).filter((r) => r.ports?.some((port) => port.port === 'metrics'));
      expect(metricsRules).toHaveLength(1);
      const from = metricsRules[0]?.from ?? [];
      expect(from.length).toBeGreaterThan(0);
      for (const peer of from) expect(peer.namespaceSelector?.matchLabels).toBeDefined();
    }
    expect(policies.filter((p) => selects(p, gatewayPods))).toHaveLength(1);
  });
});

/** Request paths a client may send: the API's, the portal's, and ones the API does not have. */
const CLIENT_PATHS = ['/', '/v1/tools', '/v1', '/docs/static/index.html', '/openapi.json', '/portal.js', '/v2/tools', '/unknown', '/metrics', '/healthz'];

/** The Ingress path that serves a request path (Kubernetes' rules: Exact, else longest Prefix by element). */
function ingressMatch<P extends { path?: string; pathType: string }>(paths: P[], requestPath: string): P | undefined {
  const elements = (p: string) => p.split('/').filter(Boolean);
  const matches = paths.filter(({ path = '/', pathType }) => {
    if (pathType === 'Exact') return path === requestPath;
    const prefix = elements(path);
    return prefix.every((element, i) => elements(requestPath)[i] === element);
  });
  return matches.sort((a, b) => (b.path ?? '').length - (a.path ?? '').length)[0];
}

describe('Ingress', () => {
  test.each(configs)('with %s values: exactly one, and it sends every path to the gateway', (name) => {
    const manifests = manifestsOf(name);
    const ingresses = ofKind<IIngress>(manifests, 'Ingress');
    expect(ingresses).toHaveLength(1);
    const ingress = ingresses[0] as IIngress;
    for (const rule of ingress.spec?.rules ?? []) {
      const paths = rule.http?.paths ?? [];
      expect(paths).toEqual([
        { path: '/', pathType: 'Prefix', backend: { service: { name: GATEWAY, port: { name: 'http' } } } },
      ]);
      // An unknown path or version reaches the gateway (its JSON 404), not the controller's page.
      for (const requestPath of CLIENT_PATHS) {
        expect([requestPath, ingressMatch(paths, requestPath)?.backend.service?.name]).toEqual([requestPath, GATEWAY]);
      }
    }
    expect(ingress.spec?.defaultBackend).toBeUndefined();
    expect(JSON.stringify(ingress)).not.toContain(CATALOG);
  });

  test('the path matcher of this test does tell routed from unrouted paths', () => {
    const apiOnly = [{ path: '/v1', pathType: 'Prefix' }, { path: '/', pathType: 'Exact' }];
    expect(ingressMatch(apiOnly, '/v1/tools')?.path).toBe('/v1');
    expect(ingressMatch(apiOnly, '/')?.path).toBe('/');
    expect(ingressMatch(apiOnly, '/v2/tools')).toBeUndefined();
    expect(ingressMatch(apiOnly, '/v10')).toBeUndefined();
  });

  test('production values terminate TLS for every host', () => {
    const ingress = ofKind<IIngress>(manifestsOf('production'), 'Ingress')[0] as IIngress;
    const hosts = (ingress.spec?.rules ?? []).map((r) => r.host);
    expect(hosts.length).toBeGreaterThan(0);
    const tlsHosts = (ingress.spec?.tls ?? []).flatMap((t) => t.hosts ?? []);
    for (const host of hosts) expect(tlsHosts).toContain(host);
    expect(ingress.spec?.ingressClassName).toBe('nginx');
  });

  test('can be turned off', () => {
    expect(ofKind(manifestsOf('embedded, existing claim, no ingress'), 'Ingress')).toHaveLength(0);
  });

  test('PUBLIC_URL defaults to the first host, https when TLS covers it; an explicit value wins', () => {
    const publicUrl = (set: string[]) =>
      configOf(render({ set: [`secrets.internalToken=${TOKEN}`, ...set] }), GATEWAY).PUBLIC_URL;
    expect(publicUrl([])).toBeUndefined();
    expect(publicUrl(['ingress.hosts[0]=api.example.com'])).toBe('http://api.example.com');
    expect(
      publicUrl([
        'ingress.hosts[0]=api.example.com',
        'ingress.tls[0].secretName=api-tls',
        'ingress.tls[0].hosts[0]=api.example.com',
      ]),
    ).toBe('https://api.example.com');
    expect(
      publicUrl(['ingress.hosts[0]=api.example.com', 'gateway.config.publicUrl=https://x.example.org']),
    ).toBe('https://x.example.org');
    expect(publicUrl(['ingress.hosts[0]=api.example.com', 'ingress.enabled=false'])).toBeUndefined();
  });
});

describe('HTTPRoute (Gateway API)', () => {
  const ROUTED = ['chart-managed secret, all options', 'gateway api, mongodb host as values'];

  test('is off by default and in values-production.yaml', () => {
    for (const [name] of configs) expect(ofKind(manifestsOf(name), 'HTTPRoute')).toHaveLength(0);
  });

  test.each(ROUTED)('with %s values: one route, every path to the gateway Service', (name) => {
    const manifests = manifestsOf(name);
    const routes = ofKind<HTTPRouteManifest>(manifests, 'HTTPRoute');
    expect(routes).toHaveLength(1);
    const route = routes[0] as HTTPRouteManifest;
    const service = named<IService>(manifests, 'Service', route.metadata.name);
    expect(service.metadata?.labels?.['app.kubernetes.io/component']).toBe('gateway');
    const port = service.spec?.ports?.find((p) => p.name === 'http')?.port;
    // One rule, PathPrefix "/": every request path reaches the gateway (what the CRD's CEL
    // rules would check is asserted here: the schema test cannot evaluate them).
    expect(route.spec.rules).toEqual([
      { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: service.metadata?.name, port }] },
    ]);
    expect(route.spec.parentRefs.length).toBeGreaterThan(0);
    for (const ref of route.spec.parentRefs) {
      expect(ref).toMatchObject({ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'public' });
    }
    expect(JSON.stringify(route)).not.toContain('catalog');
  });

  test('carries the parentRefs, hostnames, labels and annotations given', () => {
    const route = ofKind<HTTPRouteManifest>(manifestsOf('chart-managed secret, all options'), 'HTTPRoute')[0];
    expect(route?.spec.parentRefs).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'public', namespace: 'gateway-system', sectionName: 'https' },
    ]);
    expect(route?.spec.hostnames).toEqual(['tools.example.com']);
    expect(route?.metadata.labels).toMatchObject({ exposure: 'public', 'app.kubernetes.io/component': 'gateway' });
    expect(route?.metadata.annotations).toEqual({ team: 'platform' });
  });

  test('without parentRefs the render fails and says what to set', () => {
    expect(failure({ set: [`secrets.internalToken=${TOKEN}`, 'httpRoute.enabled=true'] })).toMatch(
      /httpRoute\.enabled needs httpRoute\.parentRefs/,
    );
  });

  test('PUBLIC_URL defaults to the first hostname, over https; an Ingress host comes first', () => {
    const publicUrl = (set: string[]) =>
      configOf(
        render({ set: [`secrets.internalToken=${TOKEN}`, 'httpRoute.enabled=true', 'httpRoute.parentRefs[0].name=gw', ...set] }),
        GATEWAY,
      ).PUBLIC_URL;
    expect(publicUrl([])).toBeUndefined();
    expect(publicUrl(['httpRoute.hostnames[0]=api.example.com'])).toBe('https://api.example.com');
    expect(publicUrl(['httpRoute.hostnames[0]=*.example.com'])).toBeUndefined();
    expect(publicUrl(['httpRoute.hostnames[0]=api.example.com', 'ingress.hosts[0]=old.example.com'])).toBe(
      'http://old.example.com',
    );
  });
});

describe('configuration and secrets', () => {
  test('the gateway reaches the catalog through its Service, with the shared INTERNAL_TOKEN', () => {
    for (const [name] of configs) {
      const manifests = manifestsOf(name);
      const catalogService = named<IService>(manifests, 'Service', CATALOG);
      const http = catalogService.spec?.ports?.find((p) => p.name === 'http');
      expect(configOf(manifests, GATEWAY).CATALOG_URL).toBe(`http://${CATALOG}.tool-directory.svc:${http?.port}`);
      const tokenRefs = ofKind<IDeployment>(manifests, 'Deployment').map(
        (d) => mainContainer(d).env?.find((e) => e.name === 'INTERNAL_TOKEN')?.valueFrom?.secretKeyRef,
      );
      expect(tokenRefs).toHaveLength(2);
      expect(tokenRefs[0]).toBeDefined();
      expect(tokenRefs[1]).toEqual(tokenRefs[0]);
    }
  });

  test('secrets.internalToken lands in the chart\'s Secret, the only key without backends', () => {
    const secret = named<ISecret>(manifestsOf('embedded'), 'Secret', RELEASE);
    expect(secret.data).toEqual({ INTERNAL_TOKEN: Buffer.from(TOKEN).toString('base64') });
  });

  test('with existingSecret no Secret is rendered and every secret variable comes from it', () => {
    const manifests = manifestsOf('production');
    expect(ofKind(manifests, 'Secret')).toHaveLength(0);
    const values = parse(readFileSync(productionValues, 'utf8')) as { secrets: { existingSecret: string } };
    const gateway = mainContainer(deployment(manifests, GATEWAY));
    const refs = Object.fromEntries(
      (gateway.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.name, e.valueFrom?.secretKeyRef]),
    );
    expect(Object.keys(refs).sort()).toEqual(['INTERNAL_TOKEN', 'MONGODB_URI', 'REDIS_URL']);
    for (const ref of Object.values(refs)) expect(ref?.name).toBe(values.secrets.existingSecret);
    expect(refs.MONGODB_URI?.key).toBe('MONGODB_URI');
    expect(refs.REDIS_URL?.key).toBe('REDIS_URL');
  });

  test('chart-managed MongoDB and Redis URLs and tokens land in the Secret, not in the ConfigMaps', () => {
    const manifests = manifestsOf('chart-managed secret, all options');
    const secret = named<ISecret>(manifests, 'Secret', 'td-tool-directory');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['ADMIN_TOKEN', 'INTERNAL_TOKEN', 'MONGODB_URI', 'REDIS_URL']);
    for (const cm of ofKind<IConfigMap>(manifests, 'ConfigMap')) {
      expect(JSON.stringify(cm.data)).not.toMatch(/mongodb:\/\/|redis:\/\/|0123456789abcdef0123|admin-token/);
    }
  });

  test('checksum/config changes with the ConfigMap of the pod\'s service, and only then', () => {
    const checksums = (set: string[]): Record<string, string | undefined> =>
      Object.fromEntries(
        ofKind<IDeployment>(render({ set: [`secrets.internalToken=${TOKEN}`, ...set] }), 'Deployment').map(
          (d) => [d.metadata?.name ?? '', d.spec?.template.metadata?.annotations?.['checksum/config']],
        ),
      );
    const base = checksums([]);
    const logLevel = checksums(['config.logLevel=debug']);
    expect(logLevel[GATEWAY]).not.toBe(base[GATEWAY]);
    expect(logLevel[CATALOG]).not.toBe(base[CATALOG]);
    const cors = checksums(['gateway.config.corsOrigins=https://app.example.com']);
    expect(cors[GATEWAY]).not.toBe(base[GATEWAY]);
    expect(cors[CATALOG]).toBe(base[CATALOG]);
  });

  test('SHUTDOWN_DELAY_MS and the preStop sleep follow the shutdown values', () => {
    const manifests = render({
      set: [`secrets.internalToken=${TOKEN}`, 'shutdown.delaySeconds=7', 'shutdown.preStopSleepSeconds=9'],
    });
    for (const d of ofKind<IDeployment>(manifests, 'Deployment')) {
      expect(configOf(manifests, d.metadata?.name ?? '').SHUTDOWN_DELAY_MS).toBe('7000');
      expect(mainContainer(d).lifecycle?.preStop?.sleep?.seconds).toBe(9);
      expect(d.spec?.template.spec?.terminationGracePeriodSeconds).toBe(9 + 7 + APP_GRACE_SECONDS + 5);
    }
    // Before Kubernetes 1.30 (no native sleep action) the hook runs `sleep` in the container.
    const old = render({ ...scenarios.embedded, kubeVersion: '1.29.0' });
    expect(mainContainer(deployment(old, GATEWAY)).lifecycle?.preStop?.exec?.command).toEqual(['sleep', '5']);
  });
});

describe('gateway response cache', () => {
  /** The gateway's own reading of its ConfigMap, as at startup. */
  const gatewayConfig = (manifests: Manifest[]) =>
    loadGatewayConfig({ ...configOf(manifests, GATEWAY), INTERNAL_TOKEN: TOKEN });

  test('is on, with 64 MiB, by default and in values-production.yaml', () => {
    for (const [name] of configs) {
      const config = gatewayConfig(manifestsOf(name));
      expect(config.RESPONSE_CACHE).toBe('on');
      expect(config.RESPONSE_CACHE_MAX_BYTES).toBe(64 * 1024 * 1024);
    }
  });

  test('an unquoted off in a values file turns it off; a size from a file stays in digits', () => {
    const manifests = render({
      set: [`secrets.internalToken=${TOKEN}`],
      valuesFiles: [path.join(__dirname, 'fixtures/response-cache-values.yaml')],
    });
    expect(configOf(manifests, GATEWAY).RESPONSE_CACHE_MAX_BYTES).toBe('268435456');
    const config = gatewayConfig(manifests);
    expect(config.RESPONSE_CACHE).toBe('off');
    expect(config.RESPONSE_CACHE_MAX_BYTES).toBe(268435456);
  });

  test.each([
    ['on', 'on'],
    ['off', 'off'],
    ['true', 'on'],
    ['false', 'off'],
  ])('--set responseCache=%s gives RESPONSE_CACHE=%s', (value, expected) => {
    const manifests = render({
      set: [`secrets.internalToken=${TOKEN}`, `gateway.config.responseCache=${value}`],
    });
    expect(configOf(manifests, GATEWAY).RESPONSE_CACHE).toBe(expected);
  });
});

describe('leak reports: gateway.secretScanning and gateway.config.leakReportsPerMinute', () => {
  const KEYS_CONFIGMAP = `${RELEASE}-secret-scanning`;
  const KEYS_DIR = '/etc/tool-directory/secret-scanning';
  let scratch = '';

  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'td-leak-reports-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** A file in the test's scratch directory, for --set-file and --values. */
  const scratchFile = (name: string, text: string): string => {
    const file = path.join(scratch, name);
    writeFileSync(file, text);
    return file;
  };
  const withKeys = (keysFile: string, ...set: string[]): Manifest[] =>
    render({
      set: [`secrets.internalToken=${TOKEN}`, ...set],
      setFile: [`gateway.secretScanning.publicKeys=${keysFile}`],
    });

  /** The gateway's keys volume and mount, and the file its configuration names. */
  function keysOf(manifests: Manifest[], gateway = GATEWAY) {
    const d = deployment(manifests, gateway);
    const c = mainContainer(d);
    return {
      volume: d.spec?.template.spec?.volumes?.find((v) => v.name === 'secret-scanning'),
      mount: c.volumeMounts?.find((m) => m.name === 'secret-scanning'),
      file: configOf(manifests, c.envFrom?.[0]?.configMapRef?.name ?? '').SECRET_SCANNING_PUBLIC_KEYS,
      env: (c.env ?? []).map((e) => e.name),
    };
  }

  test("publicKeys: the chart's ConfigMap holds the document as given, mounted read-only where the variable points", () => {
    const manifests = withKeys(secretScanningKeys);
    const data = named<IConfigMap>(manifests, 'ConfigMap', KEYS_CONFIGMAP).data ?? {};
    expect(data).toEqual({ 'public-keys.json': readFileSync(secretScanningKeys, 'utf8') });
    const { volume, mount, file } = keysOf(manifests);
    expect(volume?.configMap).toEqual({
      name: KEYS_CONFIGMAP,
      items: [{ key: 'public-keys.json', path: 'public-keys.json' }],
    });
    // The directory, never a subPath: a subPath mount would never see the ConfigMap's updates.
    expect(mount).toEqual({ name: 'secret-scanning', mountPath: KEYS_DIR, readOnly: true });
    expect(file).toBe(`${KEYS_DIR}/public-keys.json`);
    // The gateway accepts its configuration and reads both keys from the file the pod gets.
    const config = loadGatewayConfig({ ...configOf(manifests, GATEWAY), INTERNAL_TOKEN: TOKEN });
    expect(config.SECRET_SCANNING_PUBLIC_KEYS).toBe(file);
    const mounted = scratchFile('public-keys.json', data['public-keys.json'] ?? '');
    expect(readScanningKeys(mounted).size).toBe(2);
  });

  test('only the gateway mounts the keys, under any release name', () => {
    const manifests = manifestsOf('chart-managed secret, all options');
    expect(keysOf(manifests, 'td-tool-directory-gateway').volume?.configMap?.name).toBe(
      'td-tool-directory-secret-scanning',
    );
    for (const name of ['td-tool-directory-catalog', 'td-tool-directory-webhook-worker']) {
      const spec = deployment(manifests, name).spec?.template.spec;
      expect([name, JSON.stringify(spec)]).toEqual([name, expect.not.stringContaining('secret-scanning')]);
    }
    expect(configOf(manifests, 'td-tool-directory-catalog')).not.toHaveProperty('SECRET_SCANNING_PUBLIC_KEYS');
  });

  test('existingConfigMap: that ConfigMap is mounted, its key as the same file; the chart renders none', () => {
    const manifests = manifestsOf('existing secrets, hosts and password keys');
    const { volume, mount, file } = keysOf(manifests);
    expect(volume?.configMap).toEqual({
      name: 'github-secret-scanning-keys',
      items: [{ key: 'keys.json', path: 'public-keys.json' }],
    });
    expect(mount).toEqual({ name: 'secret-scanning', mountPath: KEYS_DIR, readOnly: true });
    expect(file).toBe(`${KEYS_DIR}/public-keys.json`);
    expect(ofKind(manifests, 'ConfigMap').map((m) => m.metadata.name)).not.toContain(KEYS_CONFIGMAP);
    // The key defaults to the name the chart's own ConfigMap uses.
    const byDefault = render({
      set: [`secrets.internalToken=${TOKEN}`, 'gateway.secretScanning.existingConfigMap=github-keys'],
    });
    expect(keysOf(byDefault).volume?.configMap?.items).toEqual([
      { key: 'public-keys.json', path: 'public-keys.json' },
    ]);
  });

  test.each(configs)('with %s values: nothing mounted, SECRET_SCANNING_PUBLIC_KEYS unset (no endpoint)', (name) => {
    const manifests = manifestsOf(name);
    const { volume, mount, file, env } = keysOf(manifests);
    expect([volume, mount, file]).toEqual([undefined, undefined, undefined]);
    expect(env).not.toContain('SECRET_SCANNING_PUBLIC_KEYS');
    const config = loadGatewayConfig({ ...configOf(manifests, GATEWAY), INTERNAL_TOKEN: TOKEN });
    expect(config.SECRET_SCANNING_PUBLIC_KEYS).toBeUndefined();
    expect(JSON.stringify(manifests)).not.toContain('secret-scanning');
  });

  test('new keys change no pod template: the gateway takes them from the mounted file without a restart', () => {
    const document = JSON.parse(readFileSync(secretScanningKeys, 'utf8')) as { public_keys: unknown[] };
    const rotated = scratchFile('rotated.json', JSON.stringify({ public_keys: document.public_keys.slice(1) }));
    const before = withKeys(secretScanningKeys);
    const after = withKeys(rotated);
    expect(named<IConfigMap>(after, 'ConfigMap', KEYS_CONFIGMAP).data).not.toEqual(
      named<IConfigMap>(before, 'ConfigMap', KEYS_CONFIGMAP).data,
    );
    for (const d of ofKind<IDeployment>(before, 'Deployment')) {
      expect(deployment(after, d.metadata?.name ?? '')).toEqual(d);
    }
  });

  test.each([
    [
      'publicKeys and existingConfigMap at once',
      'gateway.secretScanning.existingConfigMap=github-keys',
      null,
      /publicKeys or gateway\.secretScanning\.existingConfigMap, not both/,
    ],
    ['a document that is not JSON', null, 'public_keys: []', /publicKeys is not a JSON object/],
    ['a document without keys', null, '{"public_keys": []}', /holds no "public_keys" list/],
    [
      'a key without its identifier',
      null,
      '{"public_keys": [{"key": "-----BEGIN PUBLIC KEY-----"}]}',
      /lacks key_identifier or key/,
    ],
  ])('refuses %s, which the gateway would not start with', (_name, set, document, message) => {
    const keysFile = document === null ? secretScanningKeys : scratchFile('refused.json', document);
    const stderr = failure({
      set: [`secrets.internalToken=${TOKEN}`, ...(set === null ? [] : [set])],
      setFile: [`gateway.secretScanning.publicKeys=${keysFile}`],
    });
    expect(stderr).toMatch(message);
  });

  test('leakReportsPerMinute lands in LEAK_REPORTS_PER_MINUTE: 60 by default, in digits from a values file', () => {
    for (const [name] of configs) {
      expect(configOf(manifestsOf(name), GATEWAY).LEAK_REPORTS_PER_MINUTE).toBe('60');
    }
    const allOptions = configOf(manifestsOf('chart-managed secret, all options'), 'td-tool-directory-gateway');
    expect(allOptions.LEAK_REPORTS_PER_MINUTE).toBe('120');
    // A number from a values file is a float to Helm, which would print 1e+06.
    const manifests = render({
      set: [`secrets.internalToken=${TOKEN}`],
      valuesFiles: [scratchFile('leaks.yaml', 'gateway:\n  config:\n    leakReportsPerMinute: 1000000\n')],
    });
    expect(configOf(manifests, GATEWAY).LEAK_REPORTS_PER_MINUTE).toBe('1000000');
    const config = loadGatewayConfig({ ...configOf(manifests, GATEWAY), INTERNAL_TOKEN: TOKEN });
    expect(config.LEAK_REPORTS_PER_MINUTE).toBe(1_000_000);
  });
});

describe('tracing', () => {
  test('samples 5 % of traces by default when on; sampleRatio changes it', () => {
    const settings = (extra: string[]) =>
      tracingSettings(
        configOf(
          render({
            set: [
              `secrets.internalToken=${TOKEN}`,
              'tracing.enabled=true',
              'tracing.endpoint=http://otel-collector:4318',
              ...extra,
            ],
          }),
          GATEWAY,
        ),
      );
    expect(settings([])).toMatchObject({
      enabled: true,
      sampler: 'parentbased_traceidratio',
      samplerArg: '0.05',
    });
    expect(settings(['tracing.sampleRatio=1'])).toMatchObject({ samplerArg: '1' });
  });
});

describe('seed hook Job', () => {
  test('renders only when MongoDB is configured', () => {
    expect(ofKind(manifestsOf('embedded'), 'Job')).toHaveLength(0);
    expect(ofKind(manifestsOf('embedded, existing claim, no ingress'), 'Job')).toHaveLength(0);
    expect(ofKind(render({ valuesFiles: [productionValues], set: ['seed.enabled=false'] }), 'Job')).toHaveLength(0);
    for (const name of ['production', 'chart-managed secret, all options', 'existing secrets, hosts and password keys']) {
      expect(ofKind(manifestsOf(name), 'Job')).toHaveLength(1);
    }
  });

  test('runs the seed script before install, upgrade and every Argo CD sync', () => {
    const manifests = manifestsOf('production');
    const job = ofKind<IJob>(manifests, 'Job')[0] as IJob;
    // Before the Deployments: the catalog is not ready until seeded, so a post-install hook
    // would wait behind `helm install --wait`, Flux and Argo CD's health checks forever.
    expect(job.metadata?.annotations).toMatchObject({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-delete-policy': 'before-hook-creation',
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
    });
    const c = job.spec?.template.spec?.containers[0];
    expect(c?.command).toEqual(['tool-directory', 'seed']);
    expect(c?.image).toBe(mainContainer(deployment(manifests, CATALOG)).image);
    expect(c?.env?.map((e) => e.name).sort()).toEqual(['MONGODB_DB', 'MONGODB_URI']);
    expect(job.spec?.template.spec?.restartPolicy).toBe('Never');
  });

  test('reads nothing the release creates after it: its own hook Secret, an existing ServiceAccount', () => {
    const hookOrder = (m: Manifest) => Number(m.metadata.annotations?.['helm.sh/hook-weight']);
    for (const name of ['chart-managed secret, all options', 'gateway api, mongodb host as values']) {
      const manifests = manifestsOf(name);
      const job = ofKind<IJob>(manifests, 'Job')[0] as IJob;
      const hooks = manifests.filter((m) => m.metadata.annotations?.['helm.sh/hook']);
      const ref = job.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'MONGODB_URI')?.valueFrom
        ?.secretKeyRef;
      const secret = hooks.find((m) => m.kind === 'Secret' && m.metadata.name === ref?.name) as ISecret | undefined;
      expect(secret).toBeDefined();
      expect(Object.keys(secret?.data ?? {})).toEqual(['MONGODB_URI']);
      // Created first, in the same phase, and gone once the hooks succeeded.
      expect(secret?.metadata?.annotations).toMatchObject({
        'helm.sh/hook': 'pre-install,pre-upgrade',
        'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
        'argocd.argoproj.io/hook': 'PreSync',
        'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation,HookSucceeded',
      });
      expect(hookOrder(secret as Manifest)).toBeLessThan(hookOrder(job as unknown as Manifest));
      expect(Number(secret?.metadata?.annotations?.['argocd.argoproj.io/sync-wave'])).toBeLessThan(
        Number(job.metadata?.annotations?.['argocd.argoproj.io/sync-wave']),
      );
      // The same URL as the services read from the chart's Secret.
      const chartSecret = named<ISecret>(manifests, 'Secret', ref?.name?.replace(/-seed$/, '') ?? '');
      expect(secret?.data?.MONGODB_URI).toBe(chartSecret.data?.MONGODB_URI);
      // No resource of the release but hooks exists when the Job runs.
      const sa = job.spec?.template.spec?.serviceAccountName;
      expect(ofKind(manifests, 'ServiceAccount').map((m) => m.metadata.name)).not.toContain(sa);
    }
    const existing = ofKind<IJob>(manifestsOf('gateway api, mongodb host as values'), 'Job')[0];
    expect(existing?.spec?.template.spec?.serviceAccountName).toBe('tool-directory-runtime');
    expect(ofKind<IJob>(manifestsOf('chart-managed secret, all options'), 'Job')[0]?.spec?.template.spec?.serviceAccountName).toBe(
      'default',
    );
  });

  test('with the URL in an existing Secret, reads it there and renders no Secret of its own', () => {
    const manifests = manifestsOf('production');
    const job = ofKind<IJob>(manifests, 'Job')[0] as IJob;
    const ref = job.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'MONGODB_URI')?.valueFrom?.secretKeyRef;
    expect(ref?.name).toBe('tool-directory-secrets');
    expect(ofKind(manifests, 'Secret')).toHaveLength(0);
  });
});

describe('scaling and placement', () => {
  test('production: HPAs drive both Deployments, PDBs cover them, pods spread', () => {
    const manifests = manifestsOf('production');
    const hpas = ofKind<IHorizontalPodAutoscaler>(manifests, 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.spec?.scaleTargetRef.name).sort()).toEqual([CATALOG, GATEWAY]);
    for (const hpa of hpas) {
      expect(hpa.spec?.minReplicas).toBeGreaterThanOrEqual(3);
      expect(deployment(manifests, hpa.spec?.scaleTargetRef.name ?? '').spec?.replicas).toBeUndefined();
    }
    const pdbs = ofKind<IPodDisruptionBudget>(manifests, 'PodDisruptionBudget');
    expect(pdbs).toHaveLength(2);
    for (const d of ofKind<IDeployment>(manifests, 'Deployment')) {
      const labels = d.spec?.template.metadata?.labels ?? {};
      const covering = pdbs.filter((p) =>
        Object.entries(p.spec?.selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v),
      );
      expect(covering).toHaveLength(1);
      const spread = d.spec?.template.spec?.topologySpreadConstraints ?? [];
      expect(spread.map((t) => t.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
      for (const t of spread) {
        expect(Object.entries(t.labelSelector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v)).toBe(true);
      }
    }
  });
});

describe('monitoring', () => {
  test('ServiceMonitor, PrometheusRule and the dashboard are off by default', () => {
    const kinds = manifestsOf('embedded').map((m) => m.kind);
    expect(kinds).not.toContain('ServiceMonitor');
    expect(kinds).not.toContain('PrometheusRule');
    expect(ofKind<IConfigMap>(manifestsOf('embedded'), 'ConfigMap').map((c) => c.metadata?.name)).not.toContain(
      `${RELEASE}-dashboards`,
    );
  });

  test('production renders them; the dashboard ConfigMap carries the sidecar label and valid JSON', () => {
    const manifests = manifestsOf('production');
    expect(ofKind(manifests, 'ServiceMonitor')).toHaveLength(1);
    expect(ofKind(manifests, 'PrometheusRule')).toHaveLength(1);
    const dashboards = named<IConfigMap>(manifests, 'ConfigMap', `${RELEASE}-dashboards`);
    expect(dashboards.metadata?.labels?.grafana_dashboard).toBe('1');
    const files = Object.entries(dashboards.data ?? {});
    expect(files.length).toBeGreaterThan(0);
    for (const [file, text] of files) {
      expect(file).toMatch(/\.json$/);
      expect(() => JSON.parse(text)).not.toThrow();
    }
  });
});

test('the helm test Pod checks the gateway /healthz through its Service', () => {
  for (const [name] of configs) {
    const manifests = manifestsOf(name);
    const pods = ofKind<IPod>(manifests, 'Pod');
    expect(pods).toHaveLength(1);
    const pod = pods[0] as IPod;
    expect(pod.metadata?.annotations?.['helm.sh/hook']).toBe('test');
    const service = named<IService>(manifests, 'Service', GATEWAY);
    const port = service.spec?.ports?.find((p) => p.name === 'http')?.port;
    const script = [...(pod.spec?.containers[0]?.command ?? []), ...(pod.spec?.containers[0]?.args ?? [])].join(' ');
    expect(script).toContain(`http://${GATEWAY}:${port}`);
    expect(script).toContain('/healthz');
    expect(script).toContain('--fail');
  }
});

test('nothing in any rendering uses a latest tag', () => {
  for (const name of Object.keys(scenarios)) {
    expect(JSON.stringify(manifestsOf(name))).not.toMatch(/:latest\b/);
  }
});
