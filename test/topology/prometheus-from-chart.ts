import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IService } from 'kubernetes-models/v1/Service';
import { type Manifest, ofKind, productionValues, render } from '../helm/helm';

/**
 * Turns the rendered chart into what a plain Prometheus loads: the ServiceMonitor as static
 * scrape configs for processes running on this machine, and the PrometheusRule's groups as a
 * rule file. It does what the Prometheus Operator does with the two objects, so that a change
 * to either in the chart changes what the topology test's Prometheus scrapes and evaluates:
 *
 * - every Service of the release gets one target per process of the Deployment it selects and
 *   per Service port, carrying the labels Kubernetes service discovery would give it
 *   (`__meta_kubernetes_*`);
 * - the relabelings the Operator generates for a ServiceMonitor endpoint come first (keep the
 *   Services its selector matches and the endpoint's port; namespace, service, pod, container,
 *   job, endpoint), then the endpoint's own relabelings, translated field by field;
 * - interval, timeout, path, scheme and honorLabels as the endpoint says.
 *
 * A field the translation does not know fails it, rather than being dropped unseen.
 */

export const RELEASE = 'tool-directory';
export const NAMESPACE = 'tool-directory';

/** How often Prometheus scrapes each process in the topology (the ServiceMonitor's interval). */
export const SCRAPE_INTERVAL_S = 1;
/** Every alert's `for:` in the topology (the chart's `prometheusRule.forOverride`). */
export const ALERT_FOR_S = 5;

/**
 * The chart's production values, as the topology test runs them: two replicas of each service
 * (autoscaling off, so the replica count is fixed), the webhook worker in its own Deployment,
 * scraped every second, and alerts that fire after 5 s instead of minutes (`forOverride`, the
 * documented value for drills).
 */
export const TOPOLOGY_VALUES = [
  'gateway.autoscaling.enabled=false',
  'gateway.replicaCount=2',
  'catalog.autoscaling.enabled=false',
  'catalog.replicaCount=2',
  'webhooks.worker.enabled=true',
  `serviceMonitor.interval=${SCRAPE_INTERVAL_S}s`,
  `serviceMonitor.scrapeTimeout=${SCRAPE_INTERVAL_S}s`,
  `prometheusRule.forOverride=${ALERT_FOR_S}s`,
];

export function renderTopology(): Manifest[] {
  return render({
    release: RELEASE,
    namespace: NAMESPACE,
    valuesFiles: [productionValues],
    set: TOPOLOGY_VALUES,
  });
}

/** A Deployment of the rendered chart: how many processes it runs and their literal env. */
export interface Workload {
  name: string;
  component: string;
  replicas: number;
  /** The `env` entries with a literal `value` (WEBHOOK_WORKER, for one). */
  env: Record<string, string>;
}

function containerOf(deployment: IDeployment): IContainer {
  const container = deployment.spec?.template.spec?.containers[0];
  if (!container) throw new Error(`Deployment ${deployment.metadata?.name} has no container`);
  return container;
}

export function workloads(manifests: Manifest[]): Workload[] {
  return ofKind<IDeployment>(manifests, 'Deployment').map((deployment) => ({
    name: deployment.metadata!.name!,
    component: deployment.metadata!.labels!['app.kubernetes.io/component']!,
    replicas: deployment.spec?.replicas ?? 1,
    env: Object.fromEntries(
      (containerOf(deployment).env ?? []).flatMap((e) =>
        e.value === undefined ? [] : [[e.name, e.value]],
      ),
    ),
  }));
}

/** A running process standing for one pod: its name and its ports by container port name. */
export interface Pod {
  deployment: string;
  name: string;
  /** e.g. `{ http: 41234, metrics: 41235 }` */
  ports: Record<string, number>;
}

type Labels = Record<string, string>;

/** Prometheus's label-name sanitizing of Kubernetes label names (`app.kubernetes.io/x`). */
const sanitize = (name: string) => name.replace(/[^a-zA-Z0-9_]/g, '_');

const matches = (selector: Labels, labels: Labels) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

interface Relabeling {
  sourceLabels?: string[];
  separator?: string;
  targetLabel?: string;
  regex?: string;
  modulus?: number;
  replacement?: string;
  action?: string;
}

const RELABELING_FIELDS: Record<keyof Relabeling, string> = {
  sourceLabels: 'source_labels',
  separator: 'separator',
  targetLabel: 'target_label',
  regex: 'regex',
  modulus: 'modulus',
  replacement: 'replacement',
  action: 'action',
};

/** A ServiceMonitor relabeling (camelCase) as a Prometheus relabel_config (snake_case). */
function relabelConfig(relabeling: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(relabeling).map(([field, value]) => {
      const name = RELABELING_FIELDS[field as keyof Relabeling];
      if (!name) throw new Error(`ServiceMonitor relabeling field ${field} is not translated`);
      return [name, field === 'action' ? String(value).toLowerCase() : value];
    }),
  );
}

interface Endpoint {
  port: string;
  path?: string;
  scheme?: string;
  interval?: string;
  scrapeTimeout?: string;
  honorLabels?: boolean;
  relabelings?: Record<string, unknown>[];
  metricRelabelings?: Record<string, unknown>[];
}

const ENDPOINT_FIELDS = new Set([
  'port',
  'path',
  'scheme',
  'interval',
  'scrapeTimeout',
  'honorLabels',
  'relabelings',
  'metricRelabelings',
]);

interface ServiceMonitorSpec {
  selector: {
    matchLabels?: Labels;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  };
  namespaceSelector?: { matchNames?: string[]; any?: boolean };
  endpoints: Endpoint[];
  jobLabel?: string;
}

/** The Operator's keep/drop rules for a ServiceMonitor's label selector. */
function selectorRelabelings(selector: ServiceMonitorSpec['selector']) {
  const label = (key: string) => `__meta_kubernetes_service_label_${sanitize(key)}`;
  const present = (key: string) => `__meta_kubernetes_service_labelpresent_${sanitize(key)}`;
  const rules: Record<string, unknown>[] = Object.entries(selector.matchLabels ?? {}).map(
    ([key, value]) => ({
      action: 'keep',
      source_labels: [label(key), present(key)],
      regex: `(${value});true`,
    }),
  );
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const either = `(${values.join('|')});true`;
    const rule = {
      In: { action: 'keep', source_labels: [label(key), present(key)], regex: either },
      NotIn: { action: 'drop', source_labels: [label(key), present(key)], regex: either },
      Exists: { action: 'keep', source_labels: [present(key)], regex: 'true' },
      DoesNotExist: { action: 'drop', source_labels: [present(key)], regex: 'true' },
    }[operator];
    if (!rule) throw new Error(`ServiceMonitor selector operator ${operator} is not translated`);
    rules.push(rule);
  }
  return rules;
}

/** The targets Kubernetes would discover: every port of every Service, on every pod it selects. */
function discoveredTargets(manifests: Manifest[], pods: Pod[]) {
  const deployments = ofKind<IDeployment>(manifests, 'Deployment');
  return ofKind<IService>(manifests, 'Service').flatMap((service) => {
    const selected = deployments.filter((d) =>
      matches(service.spec?.selector ?? {}, d.spec?.template.metadata?.labels ?? {}),
    );
    const serviceLabels: Labels = {};
    for (const [key, value] of Object.entries(service.metadata?.labels ?? {})) {
      serviceLabels[`__meta_kubernetes_service_label_${sanitize(key)}`] = value;
      serviceLabels[`__meta_kubernetes_service_labelpresent_${sanitize(key)}`] = 'true';
    }
    return selected.flatMap((deployment) => {
      const container = containerOf(deployment);
      return pods
        .filter((pod) => pod.deployment === deployment.metadata?.name)
        .flatMap((pod) =>
          (service.spec?.ports ?? []).map((port) => {
            // targetPort names the container port, or gives its number.
            const containerPort = container.ports?.find((p) =>
              typeof port.targetPort === 'number'
                ? p.containerPort === port.targetPort
                : p.name === (port.targetPort ?? port.name),
            );
            const local = containerPort?.name && pod.ports[containerPort.name];
            if (!local) {
              throw new Error(
                `Service ${service.metadata?.name} port ${port.name} has no port of pod ${pod.name}`,
              );
            }
            return {
              targets: [`127.0.0.1:${local}`],
              labels: {
                __meta_kubernetes_namespace: service.metadata?.namespace ?? NAMESPACE,
                __meta_kubernetes_service_name: service.metadata!.name!,
                ...serviceLabels,
                __meta_kubernetes_endpoint_port_name: port.name ?? '',
                __meta_kubernetes_pod_name: pod.name,
                __meta_kubernetes_pod_container_name: container.name,
              },
            };
          }),
        );
    });
  });
}

/** One scrape config per ServiceMonitor endpoint, over the pods running here. */
export function scrapeConfigs(manifests: Manifest[], pods: Pod[]): Record<string, unknown>[] {
  const targets = discoveredTargets(manifests, pods);
  return ofKind(manifests, 'ServiceMonitor').flatMap((monitor) => {
    const spec = monitor.spec as ServiceMonitorSpec;
    const namespaces = spec.namespaceSelector?.any
      ? undefined
      : (spec.namespaceSelector?.matchNames ?? [monitor.metadata.namespace]);
    return spec.endpoints.map((endpoint, index) => {
      for (const field of Object.keys(endpoint)) {
        if (!ENDPOINT_FIELDS.has(field)) {
          throw new Error(`ServiceMonitor endpoint field ${field} is not translated`);
        }
      }
      return {
        job_name: `serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${index}`,
        honor_labels: endpoint.honorLabels ?? false,
        ...(endpoint.interval && { scrape_interval: endpoint.interval }),
        ...(endpoint.scrapeTimeout && { scrape_timeout: endpoint.scrapeTimeout }),
        metrics_path: endpoint.path ?? '/metrics',
        scheme: endpoint.scheme ?? 'http',
        static_configs: targets.filter(
          (t) => !namespaces || namespaces.includes(t.labels.__meta_kubernetes_namespace),
        ),
        relabel_configs: [
          ...selectorRelabelings(spec.selector),
          {
            action: 'keep',
            source_labels: ['__meta_kubernetes_endpoint_port_name'],
            regex: endpoint.port,
          },
          ...[
            ['__meta_kubernetes_namespace', 'namespace'],
            ['__meta_kubernetes_service_name', 'service'],
            ['__meta_kubernetes_pod_name', 'pod'],
            ['__meta_kubernetes_pod_container_name', 'container'],
            [
              spec.jobLabel
                ? `__meta_kubernetes_service_label_${sanitize(spec.jobLabel)}`
                : '__meta_kubernetes_service_name',
              'job',
            ],
          ].map(([source, target]) => ({ source_labels: [source], target_label: target })),
          { target_label: 'endpoint', replacement: endpoint.port },
          ...(endpoint.relabelings ?? []).map(relabelConfig),
        ],
        ...(endpoint.metricRelabelings && {
          metric_relabel_configs: endpoint.metricRelabelings.map(relabelConfig),
        }),
      };
    });
  });
}

export interface RuleGroup {
  name: string;
  interval?: string;
  rules: { alert?: string; record?: string; expr: string; for?: string }[];
}

/** The PrometheusRule's groups: the rule file the Operator would hand to Prometheus. */
export function ruleGroups(manifests: Manifest[]): RuleGroup[] {
  const rules = ofKind(manifests, 'PrometheusRule');
  if (rules.length !== 1) throw new Error(`expected one PrometheusRule, got ${rules.length}`);
  return (rules[0]!.spec as { groups: RuleGroup[] }).groups;
}
