import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { IPersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IService } from 'kubernetes-models/v1/Service';
import { parse } from 'yaml';
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
  render,
  type RenderOptions,
  scenarios,
  templateArgs,
  TOKEN,
} from './helm';

/**
 * How platform teams install: GitOps renders (Argo CD, Flux) without cluster access, secrets
 * that roll the pods, backends they bring (externalMongodb, externalRedis), state on volumes in
 * the embedded mode, and the value combinations the chart refuses.
 */

const RELEASE = 'tool-directory';
const GATEWAY = `${RELEASE}-gateway`;
const CATALOG = `${RELEASE}-catalog`;
const WORKER = `${RELEASE}-webhook-worker`;
const WITH_TOKEN = `secrets.internalToken=${TOKEN}`;
const MONGODB_URL = 'externalMongodb.url=mongodb://mongodb.databases.svc:27017';
const REDIS_URL = 'externalRedis.url=redis://redis.databases.svc:6379';

const renderWith = (...set: string[]): Manifest[] => render({ set: [WITH_TOKEN, ...set] });

function envOf(d: IDeployment | IJob): Record<string, IEnvVar> {
  const container = d.spec?.template.spec?.containers[0];
  return Object.fromEntries((container?.env ?? []).map((e) => [e.name, e]));
}

function secretData(manifests: Manifest[]): Record<string, string> {
  const secret = named<ISecret>(manifests, 'Secret', RELEASE);
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

function podAnnotation(manifests: Manifest[], name: string, key: string): string | undefined {
  return named<IDeployment>(manifests, 'Deployment', name).spec?.template.metadata?.annotations?.[key];
}

describe('GitOps: the same values render the same manifests', () => {
  test.each(Object.entries(scenarios))('rendering %s twice gives identical output', (_name, options) => {
    const first = helm(templateArgs(options));
    const second = helm(templateArgs(options));
    expect(first.status).toBe(0);
    expect(second.stdout).toBe(first.stdout);
  });

  test('no template asks the cluster (lookup) or calls a random, time or key-generating function', () => {
    const templates = path.join(chartDir, 'templates');
    const files = readdirSync(templates, { recursive: true, encoding: 'utf8' }).filter((f) =>
      /\.(ya?ml|tpl|txt)$/.test(f),
    );
    expect(files.length).toBeGreaterThan(10);
    const impure = /\b(lookup|rand[A-Z]\w*|randInt|uuidv4|now|date\w*|gen(PrivateKey|CA|SelfSignedCert|SignedCert))\b/;
    for (const file of files) {
      // Quoted strings (messages) may name such things; only calls matter.
      const code = readFileSync(path.join(templates, file), 'utf8').replace(/"(?:[^"\\]|\\.)*"/g, '""');
      expect([file, code]).toEqual([file, expect.not.stringMatching(impure)]);
    }
  });

  test('without a token the render fails and says how to give one', () => {
    const stderr = failure({});
    expect(stderr).toMatch(/INTERNAL_TOKEN is missing/);
    expect(stderr).toMatch(/secrets\.internalToken/);
    expect(stderr).toMatch(/openssl rand -hex 32/);
    expect(stderr).toMatch(/secrets\.existingSecret/);
  });

  test('a token as a value and an existing Secret at once is refused', () => {
    expect(failure({ set: [WITH_TOKEN, 'secrets.existingSecret=s'] })).toMatch(/not both/);
  });
});

describe('checksum/secret is the hash of the Secret the chart renders', () => {
  const checksums = (...set: string[]): Record<string, string | undefined> => {
    const manifests = renderWith(MONGODB_URL, REDIS_URL, 'webhooks.worker.enabled=true', ...set);
    return Object.fromEntries(
      [GATEWAY, CATALOG, WORKER].map((name) => [name, podAnnotation(manifests, name, 'checksum/secret')]),
    );
  };
  const base = checksums();

  test('every pod carries the same hash of the Secret', () => {
    expect(base[GATEWAY]).toMatch(/^[0-9a-f]{64}$/);
    expect(base[CATALOG]).toBe(base[GATEWAY]);
    expect(base[WORKER]).toBe(base[GATEWAY]);
  });

  test.each([
    ['the token', ['secrets.internalToken=another-internal-token-value']],
    ['a backend URL', ['externalRedis.url=redis://redis-2.databases.svc:6379']],
    ['the admin token', ['catalog.adminToken=admin-token-0123456789']],
  ])('a change of %s rolls every pod', (_what, set) => {
    const changed = checksums(...set);
    for (const name of [GATEWAY, CATALOG, WORKER]) expect(changed[name]).not.toBe(base[name]);
  });

  test('values outside the Secret leave it alone (they roll pods through checksum/config instead)', () => {
    expect(checksums('externalMongodb.database=other')).toEqual(base);
    expect(checksums('config.logLevel=debug')).toEqual(base);
  });

  test('it changes exactly when the rendered Secret data does, not with its labels', () => {
    const variants = [
      [],
      ['externalMongodb.database=x'],
      ['commonLabels.team=platform'],
      ['catalog.adminToken=admin-token-0123456789'],
      ['externalMongodb.url=mongodb://elsewhere:27017'],
    ].map((set) => {
      const manifests = renderWith(MONGODB_URL, REDIS_URL, ...set);
      return { set, data: JSON.stringify(secretData(manifests)), hash: podAnnotation(manifests, GATEWAY, 'checksum/secret') };
    });
    for (const a of variants) {
      for (const b of variants) {
        expect([a.set, b.set, a.hash === b.hash]).toEqual([a.set, b.set, a.data === b.data]);
      }
    }
  });

  test('existing Secrets cannot be hashed: reloader.enabled names them for Stakater Reloader', () => {
    const manifests = manifestsOfScenario('existing secrets, hosts and password keys');
    for (const d of ofKind<IDeployment>(manifests, 'Deployment')) {
      expect(d.metadata?.annotations?.['secret.reloader.stakater.com/reload']).toBe(
        'td-secrets,mongodb-credentials,redis',
      );
    }
    const without = ofKind<IDeployment>(render(scenarios.production ?? {}), 'Deployment');
    for (const d of without) expect(d.metadata?.annotations).toBeUndefined();
  });
});

const scenarioCache = new Map<string, Manifest[]>();
function manifestsOfScenario(name: string): Manifest[] {
  let manifests = scenarioCache.get(name);
  if (!manifests) {
    manifests = render(scenarios[name] as RenderOptions);
    scenarioCache.set(name, manifests);
  }
  return manifests;
}

describe('externalMongodb and externalRedis (Bitnami convention)', () => {
  test('a url goes into the chart Secret, which every service reads; the seed Job reads its own copy', () => {
    const manifests = renderWith(MONGODB_URL, REDIS_URL);
    expect(secretData(manifests)).toMatchObject({
      MONGODB_URI: 'mongodb://mongodb.databases.svc:27017',
      REDIS_URL: 'redis://redis.databases.svc:6379',
    });
    const services = ofKind<IDeployment>(manifests, 'Deployment');
    expect(services).toHaveLength(2);
    for (const d of services) {
      expect(envOf(d).MONGODB_URI?.valueFrom?.secretKeyRef).toEqual({ name: RELEASE, key: 'MONGODB_URI' });
    }
    // The Job runs before the chart's Secret exists (a pre-install hook): a hook Secret of its own.
    const [job] = ofKind<IJob>(manifests, 'Job');
    expect(envOf(job as IJob).MONGODB_URI?.valueFrom?.secretKeyRef).toEqual({ name: `${RELEASE}-seed`, key: 'MONGODB_URI' });
    const seedSecret = named<ISecret>(manifests, 'Secret', `${RELEASE}-seed`);
    expect(Buffer.from(seedSecret.data?.MONGODB_URI ?? '', 'base64').toString()).toBe('mongodb://mongodb.databases.svc:27017');
    // The catalog needs Redis too: the webhook delivery queue
    // (docs/api.md#the-system-behind-the-api).
    for (const name of [GATEWAY, CATALOG]) {
      const d = named<IDeployment>(manifests, 'Deployment', name);
      expect(envOf(d).REDIS_URL?.valueFrom?.secretKeyRef).toEqual({ name: RELEASE, key: 'REDIS_URL' });
    }
  });

  test('host, user and password are built into URL-encoded URLs', () => {
    const manifests = renderWith(
      'externalMongodb.host=mongo.db.svc',
      'externalMongodb.port=27018',
      'externalMongodb.username=tool dir',
      'externalMongodb.password=p@ss:w/rd+%',
      'externalMongodb.options=authSource=admin&tls=true',
      'externalRedis.host=redis.db.svc',
      'externalRedis.password=s3cr#t',
      'externalRedis.database=2',
      'externalRedis.tls=true',
    );
    const data = secretData(manifests);
    expect(data.MONGODB_URI).toBe('mongodb://tool%20dir:p%40ss%3Aw%2Frd%2B%25@mongo.db.svc:27018/?authSource=admin&tls=true');
    expect(data.REDIS_URL).toBe('rediss://:s3cr%23t@redis.db.svc:6379/2');
    const mongo = new URL(data.MONGODB_URI ?? '');
    expect([decodeURIComponent(mongo.username), decodeURIComponent(mongo.password)]).toEqual(['tool dir', 'p@ss:w/rd+%']);
    expect(decodeURIComponent(new URL(data.REDIS_URL ?? '').password)).toBe('s3cr#t');
  });

  test('host with the password in an existing Secret: Kubernetes expands it into the URL', () => {
    const manifests = manifestsOfScenario('existing secrets, hosts and password keys');
    expect(ofKind(manifests, 'Secret')).toHaveLength(0);
    const job = ofKind<IJob>(manifests, 'Job')[0] as IJob;
    for (const d of [...ofKind<IDeployment>(manifests, 'Deployment'), job]) {
      const env = d.spec?.template.spec?.containers[0]?.env ?? [];
      const names = env.map((e) => e.name);
      const byName = envOf(d);
      expect(byName.MONGODB_PASSWORD?.valueFrom?.secretKeyRef).toEqual({
        name: 'mongodb-credentials',
        key: 'MONGODB_PASSWORD',
      });
      expect(byName.MONGODB_URI?.value).toBe(
        'mongodb://tooldir:$(MONGODB_PASSWORD)@mongodb.databases.svc:27017/?authSource=admin',
      );
      // $(VAR) only expands variables defined earlier in the list.
      expect(names.indexOf('MONGODB_PASSWORD')).toBeLessThan(names.indexOf('MONGODB_URI'));
      if (d.kind === 'Job') continue;
      expect(byName.REDIS_PASSWORD?.valueFrom?.secretKeyRef).toEqual({ name: 'redis', key: 'redis-password' });
      expect(byName.REDIS_URL?.value).toBe('rediss://:$(REDIS_PASSWORD)@redis-master.databases.svc:6379/0');
      expect(names.indexOf('REDIS_PASSWORD')).toBeLessThan(names.indexOf('REDIS_URL'));
    }
  });

  test('an existing Secret alone holds the whole URL under the configured key', () => {
    const manifests = renderWith(
      'externalMongodb.existingSecret=mongodb-admin-tooldir',
      'externalMongodb.existingSecretUrlKey=connectionString.standard',
    );
    const gateway = named<IDeployment>(manifests, 'Deployment', GATEWAY);
    expect(envOf(gateway).MONGODB_URI?.valueFrom?.secretKeyRef).toEqual({
      name: 'mongodb-admin-tooldir',
      key: 'connectionString.standard',
    });
    expect(envOf(gateway).MONGODB_PASSWORD).toBeUndefined();
    expect(secretData(manifests)).toEqual({ INTERNAL_TOKEN: TOKEN });
  });

  test('a Redis Cluster: every workload gets its nodes, user, password, TLS and CA file', () => {
    const manifests = manifestsOfScenario('redis cluster, TLS CA and password from secrets');
    // The password stays in its own Secret: the chart's holds no Redis credential.
    expect(Object.keys(secretData(manifests)).sort()).toEqual(['INTERNAL_TOKEN', 'MONGODB_URI']);
    const workloads = ofKind<IDeployment>(manifests, 'Deployment');
    expect(workloads).toHaveLength(3);
    for (const d of workloads) {
      const env = envOf(d);
      expect(env.REDIS_CLUSTER_NODES?.value).toBe('clustercfg.tooldir.abc123.use1.cache.amazonaws.com:6379');
      expect(env.REDIS_USERNAME?.value).toBe('tooldir');
      expect(env.REDIS_PASSWORD?.valueFrom?.secretKeyRef).toEqual({ name: 'redis-auth', key: 'password' });
      expect(env.REDIS_TLS?.value).toBe('true');
      expect(env.REDIS_TLS_SERVERNAME?.value).toBe('tooldir.cache.example.com');
      expect(env.REDIS_URL).toBeUndefined();
      // The CA certificate: a read-only mount of the Secret's key, named by REDIS_TLS_CA_FILE.
      const pod = d.spec!.template.spec!;
      const mount = pod.containers[0]!.volumeMounts!.find((m) => m.name === 'redis-ca');
      expect(mount).toMatchObject({ readOnly: true });
      expect(env.REDIS_TLS_CA_FILE?.value).toBe(`${mount!.mountPath}/ca.crt`);
      expect(pod.volumes!.find((v) => v.name === 'redis-ca')?.secret).toEqual({
        secretName: 'redis-ca',
        items: [{ key: 'ca.crt', path: 'ca.crt' }],
      });
      // A rotated CA or password rolls the pods under Reloader.
      expect(d.metadata?.annotations?.['secret.reloader.stakater.com/reload']).toBe('redis-auth,redis-ca');
    }
  });

  test('Redis behind Sentinel, the password as a value in the chart Secret', () => {
    const manifests = renderWith(
      MONGODB_URL,
      'externalRedis.sentinel.enabled=true',
      'externalRedis.sentinel.hosts=redis-node-0.redis-headless.db.svc:26379\\,redis-node-1.redis-headless.db.svc:26379',
      'externalRedis.password=s3cr#t',
    );
    expect(secretData(manifests)).toMatchObject({ REDIS_PASSWORD: 's3cr#t' });
    expect(secretData(manifests).REDIS_URL).toBeUndefined();
    for (const name of [GATEWAY, CATALOG]) {
      const env = envOf(named<IDeployment>(manifests, 'Deployment', name));
      expect(env.REDIS_SENTINELS?.value).toBe(
        'redis-node-0.redis-headless.db.svc:26379,redis-node-1.redis-headless.db.svc:26379',
      );
      expect(env.REDIS_SENTINEL_MASTER?.value).toBe('mymaster');
      expect(env.REDIS_PASSWORD?.valueFrom?.secretKeyRef).toEqual({ name: RELEASE, key: 'REDIS_PASSWORD' });
    }
  });

  test.each([
    [[WITH_TOKEN, 'externalRedis.cluster.enabled=true'], /needs externalRedis\.cluster\.nodes/],
    [[WITH_TOKEN, 'externalRedis.cluster.enabled=true', 'externalRedis.cluster.nodes=a:6379', REDIS_URL], /unset externalRedis\.url and externalRedis\.host/],
    [[WITH_TOKEN, 'externalRedis.cluster.enabled=true', 'externalRedis.cluster.nodes=a:6379', 'externalRedis.database=1'], /database 0 only/],
    [[WITH_TOKEN, 'externalRedis.cluster.enabled=true', 'externalRedis.cluster.nodes=a:6379', 'externalRedis.sentinel.enabled=true', 'externalRedis.sentinel.hosts=s:26379'], /not both/],
    [[WITH_TOKEN, 'externalRedis.sentinel.enabled=true'], /needs externalRedis\.sentinel\.hosts/],
    [[WITH_TOKEN, 'externalRedis.tlsCaSecret=redis-ca'], /no Redis is/],
    [[WITH_TOKEN, 'externalRedis.cluster.nodes=a:6379 b:6379'], /schema/],
  ])('Redis Cluster and Sentinel values that cannot work fail: %j', (set, message) => {
    expect(failure({ set })).toMatch(message);
  });

  test.each([
    [[WITH_TOKEN, MONGODB_URL, 'externalMongodb.host=h'], /externalMongodb\.url or externalMongodb\.host, not both/],
    [[WITH_TOKEN, REDIS_URL, 'externalRedis.existingSecret=s'], /externalRedis\.url or externalRedis\.existingSecret/],
    [[WITH_TOKEN, 'externalRedis.host=h', 'externalRedis.password=p', 'externalRedis.existingSecret=s'], /externalRedis\.password or/],
    [[WITH_TOKEN, MONGODB_URL, 'externalMongodb.password=p'], /go with externalMongodb\.host/],
    [[WITH_TOKEN, 'externalMongodb.host=h', 'externalMongodb.password=p'], /needs externalMongodb\.username/],
    [['secrets.existingSecret=s', 'catalog.adminToken=admin-token-0123456789'], /put ADMIN_TOKEN into that Secret/],
  ])('conflicting values fail: %j', (set, message) => {
    expect(failure({ set })).toMatch(message);
  });
});

describe('replicas (docs/api.md#quotas-and-rate-limit-headers: quotas are shared by every gateway replica)', () => {
  test('MongoDB without Redis refuses more than one gateway replica, fixed or by HPA', () => {
    const message = /Without Redis every gateway replica would count quotas on its own/;
    expect(failure({ set: [WITH_TOKEN, MONGODB_URL, 'gateway.replicaCount=2'] })).toMatch(message);
    expect(failure({ set: [WITH_TOKEN, MONGODB_URL, 'gateway.autoscaling.enabled=true'] })).toMatch(message);
  });

  test('MongoDB without Redis: one gateway replica, or an HPA capped at one, renders', () => {
    const capped = renderWith(
      MONGODB_URL,
      'gateway.autoscaling.enabled=true',
      'gateway.autoscaling.minReplicas=1',
      'gateway.autoscaling.maxReplicas=1',
      'catalog.replicaCount=3',
    );
    const hpa = ofKind<IHorizontalPodAutoscaler>(capped, 'HorizontalPodAutoscaler')[0];
    expect(hpa?.spec?.maxReplicas).toBe(1);
    expect(deploymentOf(capped, 'catalog').spec?.replicas).toBe(3);
  });

  test('with MongoDB and Redis the gateway scales', () => {
    expect(deploymentOf(renderWith(MONGODB_URL, REDIS_URL, 'gateway.replicaCount=4'), 'gateway').spec?.replicas).toBe(4);
  });

  test('an HPA whose minimum exceeds its maximum is refused', () => {
    const set = [WITH_TOKEN, MONGODB_URL, REDIS_URL, 'catalog.autoscaling.enabled=true', 'catalog.autoscaling.minReplicas=5', 'catalog.autoscaling.maxReplicas=3'];
    expect(failure({ set })).toMatch(/catalog\.autoscaling\.minReplicas \(5\) is above maxReplicas \(3\)/);
  });
});

describe('embedded mode: every service that keeps state has a claim at DATA_DIR', () => {
  const embedded = (): Manifest[] => manifestsOfScenario('embedded');

  test.each([
    ['gateway', 'keys.db'],
    ['catalog', 'catalog.db'],
  ])('the %s: one replica, Recreate, a ReadWriteOnce claim mounted at DATA_DIR=/data', (component) => {
    const manifests = embedded();
    const d = deploymentOf(manifests, component);
    expect(d.spec?.replicas).toBe(1);
    expect(d.spec?.strategy?.type).toBe('Recreate');
    const claimName = d.spec?.template.spec?.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName;
    expect(claimName).toBe(`${RELEASE}-${component}-data`);
    const claim = named<IPersistentVolumeClaim>(manifests, 'PersistentVolumeClaim', claimName ?? '');
    expect(claim.spec?.accessModes).toEqual(['ReadWriteOnce']);
    expect(claim.metadata?.annotations?.['helm.sh/resource-policy']).toBe('keep');
    expect(mainContainer(d).volumeMounts).toContainEqual({ name: 'data', mountPath: '/data' });
    const cm = mainContainer(d).envFrom?.[0]?.configMapRef?.name ?? '';
    expect(configOf(manifests, cm).DATA_DIR).toBe('/data');
  });

  test('an existing claim replaces the chart\'s; storageClass reaches the claim', () => {
    const manifests = manifestsOfScenario('embedded, existing claim, no ingress');
    const claims = ofKind<IPersistentVolumeClaim>(manifests, 'PersistentVolumeClaim');
    expect(claims.map((c) => c.metadata?.name)).toEqual([`${RELEASE}-catalog-data`]);
    expect(claims[0]?.spec?.storageClassName).toBe('fast-ssd');
    const gateway = deploymentOf(manifests, 'gateway');
    expect(gateway.spec?.template.spec?.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName).toBe(
      'restored-keys',
    );
  });

  test.each(['gateway', 'catalog'])('more than one %s replica, or an HPA, is refused', (component) => {
    const message = new RegExp(`Without MongoDB the ${component} keeps .* must run as one replica`);
    expect(failure({ set: [WITH_TOKEN, `${component}.replicaCount=2`] })).toMatch(message);
    expect(failure({ set: [WITH_TOKEN, `${component}.autoscaling.enabled=true`] })).toMatch(message);
  });

  test('with MongoDB the services are stateless: no claims, rolling updates, an emptyDir', () => {
    const manifests = renderWith(MONGODB_URL, REDIS_URL);
    expect(ofKind(manifests, 'PersistentVolumeClaim')).toHaveLength(0);
    for (const d of ofKind<IDeployment>(manifests, 'Deployment')) {
      expect(d.spec?.strategy?.type).toBe('RollingUpdate');
      expect(d.spec?.template.spec?.volumes?.find((v) => v.name === 'data')?.emptyDir).toBeDefined();
    }
  });
});

describe('catalog ADMIN_TOKEN', () => {
  test('from catalog.adminToken: the chart Secret, on the catalog container only', () => {
    const manifests = renderWith(MONGODB_URL, REDIS_URL, 'catalog.adminToken=admin-token-0123456789', 'webhooks.worker.enabled=true');
    expect(secretData(manifests).ADMIN_TOKEN).toBe('admin-token-0123456789');
    expect(envOf(deploymentOf(manifests, 'catalog')).ADMIN_TOKEN?.valueFrom?.secretKeyRef).toEqual({
      name: RELEASE,
      key: 'ADMIN_TOKEN',
    });
    for (const component of ['gateway', 'webhook-worker']) {
      expect(envOf(deploymentOf(manifests, component)).ADMIN_TOKEN).toBeUndefined();
    }
  });

  test('from an existing Secret: an optional key, so a Secret without it leaves the endpoints off', () => {
    const manifests = render(scenarios.production ?? {});
    expect(envOf(deploymentOf(manifests, 'catalog')).ADMIN_TOKEN?.valueFrom?.secretKeyRef).toEqual({
      name: 'tool-directory-secrets',
      key: 'ADMIN_TOKEN',
      optional: true,
    });
    expect(envOf(deploymentOf(manifests, 'gateway')).ADMIN_TOKEN).toBeUndefined();
  });

  test('unset without an existing Secret: no variable, admin endpoints off', () => {
    expect(envOf(deploymentOf(manifestsOfScenario('embedded'), 'catalog')).ADMIN_TOKEN).toBeUndefined();
  });
});

describe('webhooks.worker', () => {
  test('off (default): the catalog delivers webhooks itself', () => {
    const manifests = manifestsOfScenario('embedded');
    expect(envOf(deploymentOf(manifests, 'catalog')).WEBHOOK_WORKER?.value).toBe('on');
    expect(envOf(deploymentOf(manifests, 'gateway')).WEBHOOK_WORKER).toBeUndefined();
    expect(ofKind<IDeployment>(manifests, 'Deployment')).toHaveLength(2);
  });

  test('on: a Deployment of the catalog image delivers them, the catalog does not', () => {
    const manifests = manifestsOfScenario('chart-managed secret, all options');
    const catalog = deploymentOf(manifests, 'catalog');
    const worker = deploymentOf(manifests, 'webhook-worker');
    expect(envOf(catalog).WEBHOOK_WORKER?.value).toBe('off');
    expect(envOf(worker).WEBHOOK_WORKER?.value).toBe('only');
    expect(mainContainer(worker).image).toBe(mainContainer(catalog).image);
    expect(mainContainer(worker).envFrom).toEqual(mainContainer(catalog).envFrom);
    // The worker's Service has the metrics port only: nothing routes API traffic to it.
    const services = ofKind<IService>(manifests, 'Service').filter(
      (s) => s.metadata?.labels?.['app.kubernetes.io/component'] === 'webhook-worker',
    );
    expect(services.map((s) => s.spec?.ports?.map((p) => p.name))).toEqual([['metrics']]);
  });

  test('needs MongoDB and Redis: the embedded queue is on the catalog\'s own volume', () => {
    const message = /webhooks\.worker\.enabled needs externalMongodb and externalRedis/;
    expect(failure({ set: [WITH_TOKEN, 'webhooks.worker.enabled=true'] })).toMatch(message);
    expect(failure({ set: [WITH_TOKEN, MONGODB_URL, 'webhooks.worker.enabled=true'] })).toMatch(message);
  });
});

describe('alert runbook links', () => {
  const runbooks = (manifests: Manifest[]): string[] => {
    const rule = ofKind(manifests, 'PrometheusRule')[0] as Manifest;
    const groups = (rule.spec as { groups: Array<{ rules: Array<{ annotations?: Record<string, string> }> }> }).groups;
    return groups.flatMap((g) => g.rules.flatMap((r) => (r.annotations?.runbook_url ? [r.annotations.runbook_url] : [])));
  };

  test('are absolute URLs under docsBaseUrl, keeping the page and anchor', () => {
    const file = parse(readFileSync(path.join(chartDir, 'files/alerts.yml'), 'utf8')) as {
      groups: Array<{ rules: Array<{ annotations?: Record<string, string> }> }>;
    };
    const relative = file.groups.flatMap((g) => g.rules.flatMap((r) => r.annotations?.runbook_url ?? []));
    expect(relative.length).toBeGreaterThan(8);
    for (const base of ['https://wiki.example.com/td', 'https://wiki.example.com/td/']) {
      const rendered = runbooks(renderWith('prometheusRule.enabled=true', `docsBaseUrl=${base}`));
      expect(rendered).toEqual(relative.map((url) => url.replace(/^docs\//, 'https://wiki.example.com/td/')));
    }
  });

  test('need docsBaseUrl: no default points at a copy of the docs that may not exist', () => {
    const values = parse(readFileSync(path.join(chartDir, 'values.yaml'), 'utf8')) as { docsBaseUrl: string };
    expect(values.docsBaseUrl).toBe('');
    expect(failure({ set: [WITH_TOKEN, 'prometheusRule.enabled=true'] })).toMatch(/prometheusRule\.enabled needs docsBaseUrl/);
    // Without the PrometheusRule nothing links to the docs, so nothing is required.
    expect(ofKind(renderWith(), 'PrometheusRule')).toHaveLength(0);
  });
});

describe('prometheusRule.forOverride', () => {
  type Rule = { alert?: string; record?: string; for?: string };
  const rulesOf = (manifests: Manifest[]): Rule[] => {
    const rule = ofKind(manifests, 'PrometheusRule')[0] as Manifest;
    return (rule.spec as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
  };
  const DOCS = 'docsBaseUrl=https://wiki.example.com/td';
  const file = parse(readFileSync(path.join(chartDir, 'files/alerts.yml'), 'utf8')) as {
    groups: Array<{ rules: Rule[] }>;
  };
  const fromFile = file.groups.flatMap((g) => g.rules);

  test("unset, every alert keeps files/alerts.yml's own for:", () => {
    const rules = rulesOf(renderWith('prometheusRule.enabled=true', DOCS));
    expect(rules.map((r) => r.for)).toEqual(fromFile.map((r) => r.for));
    expect(new Set(rules.flatMap((r) => r.for ?? [])).size).toBeGreaterThan(3);
  });

  test("replaces every alert's for:, and leaves the recording rules without one", () => {
    const rules = rulesOf(renderWith('prometheusRule.enabled=true', DOCS, 'prometheusRule.forOverride=5s'));
    const alerts = rules.filter((r) => r.alert);
    expect(alerts.length).toBe(fromFile.filter((r) => r.alert).length);
    for (const alert of alerts) expect(alert.for).toBe('5s');
    for (const recording of rules.filter((r) => r.record)) expect(recording).not.toHaveProperty('for');
  });

  test.each(['5', 'soon', '5 s', '-5s'])('refuses %j: not a Prometheus duration', (value) => {
    expect(failure({ set: [WITH_TOKEN, `prometheusRule.forOverride=${value}`] })).toMatch(
      /values don't meet the specifications of the schema/,
    );
  });
});
