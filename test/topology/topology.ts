import { rmSync } from 'node:fs';
import { INTERNAL_HEADERS } from '../../services/shared/contract';
import type { Manifest } from '../helm/helm';
import { freePort } from '../support/ports';
import { RedisServer } from '../support/redis-server';
import {
  CATALOG_CLI,
  INTERNAL_TOKEN,
  ServiceProcess,
  keysCli,
  runCli,
  tempDataDir,
} from '../support/services';
import { TcpForwarder } from '../support/tcp-forwarder';
import { mountTmpfs, unmount } from '../support/tmpfs';
import { NginxBalancer } from './nginx-balancer';
import { AlertWatcher, PrometheusServer } from './prometheus';
import {
  type Pod,
  type Workload,
  renderTopology,
  ruleGroups,
  scrapeConfigs,
  workloads,
} from './prometheus-from-chart';

export const ADMIN_TOKEN = 'topology-admin-token-0123456789';
/** The Free quota: small, so that a test exhausts it with a handful of concurrent requests. */
export const QUOTA_FREE = 20;
/** The open-files limit of the last gateway replica, as a container's `ulimit -n` would set. */
export const GATEWAY_OPEN_FILES_LIMIT = 256;
/** Timeout of the gateways' catalog calls: a catalog stalled longer answers 504. */
const UPSTREAM_TIMEOUT_MS = 4_000;
/** The catalogs' and the worker's webhook retry schedule: a failing receiver is retried each second. */
export const WEBHOOK_RETRY_MS = 1_000;
const RETRY_SCHEDULE = Array(15).fill(`${WEBHOOK_RETRY_MS}ms`).join(',');
/** Readiness fails this long after SIGTERM before the listener closes (the chart: 5 s). */
const SHUTDOWN_DELAY_MS = '1000';

/** One replica of a Deployment: a process on fixed ports, so a restart takes its place. */
export class Replica {
  process!: ServiceProcess;

  constructor(
    readonly workload: Workload,
    /** The pod name it stands for, e.g. tool-directory-gateway-1. */
    readonly name: string,
    private readonly kind: 'gateway' | 'catalog',
    private readonly env: Record<string, string>,
    private readonly openFilesLimit?: number,
  ) {}

  get port(): number {
    return Number(this.env.PORT ?? this.env.CATALOG_PORT);
  }

  get metricsPort(): number {
    return Number(this.env.METRICS_PORT);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The `instance` label Prometheus gives its target. */
  get instance(): string {
    return `127.0.0.1:${this.metricsPort}`;
  }

  get pod(): Pod {
    return {
      deployment: this.workload.name,
      name: this.name,
      ports: { http: this.port, metrics: this.metricsPort },
    };
  }

  async start(): Promise<void> {
    this.process = await ServiceProcess.start(this.kind, this.env, {
      ...(this.openFilesLimit !== undefined && { openFilesLimit: this.openFilesLimit }),
    });
  }

  stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    return this.process.stop(signal);
  }

  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.process.child.kill(signal);
  }
}

/**
 * The production topology on this machine, as the chart's production values describe it (two
 * gateways, two catalogs, the webhook worker; Redis; Prometheus with the chart's ServiceMonitor
 * and PrometheusRule), with processes for pods:
 *
 *   client ──▶ nginx ──▶ gateway ×2 ──▶ TCP balancer ──▶ catalog ×2      webhook worker
 *                            │    (a Kubernetes Service)      │                │
 *                            └──────────── Redis: quotas, change feed, delivery queue
 *   Prometheus scrapes every process's metrics port; alerts on its API
 *
 * Without a MongoDB server, the replicas of each service share one DATA_DIR (the embedded
 * store's multi-process mode, as `npm start` runs it): the catalogs' on a tmpfs of their own.
 */
export class Topology {
  readonly started = Date.now();
  redis!: RedisServer;
  gateways: Replica[] = [];
  catalogs: Replica[] = [];
  workers: Replica[] = [];
  catalogService!: TcpForwarder;
  balancer!: NginxBalancer;
  prometheus!: PrometheusServer;
  alerts!: AlertWatcher;
  readonly gatewayDataDir = tempDataDir();
  catalogDataDir = '';
  private readonly prometheusDir = tempDataDir();

  private constructor(readonly manifests: Manifest[]) {}

  get replicas(): Replica[] {
    return [...this.catalogs, ...this.workers, ...this.gateways];
  }

  /** The environment of the catalog CLI: the catalogs' store and Redis. */
  get catalogCliEnv(): Record<string, string> {
    return { DATA_DIR: this.catalogDataDir, REDIS_URL: this.redis.url };
  }

  /** The environment of the keys CLI: the gateways' store and Redis. */
  get keysCliEnv(): Record<string, string> {
    return {
      DATA_DIR: this.gatewayDataDir,
      REDIS_URL: this.redis.url,
      QUOTA_FREE: String(QUOTA_FREE),
    };
  }

  static async start(): Promise<Topology> {
    const topology = new Topology(renderTopology());
    try {
      await topology.startAll();
    } catch (err) {
      await topology.stop();
      throw err;
    }
    return topology;
  }

  private async ports(kind: 'gateway' | 'catalog'): Promise<Record<string, string>> {
    return {
      [kind === 'gateway' ? 'PORT' : 'CATALOG_PORT']: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    };
  }

  private async startAll(): Promise<void> {
    this.catalogDataDir = mountTmpfs(64 * 1024);
    this.redis = await RedisServer.start();
    const byComponent = (component: string) => {
      const found = workloads(this.manifests).find((w) => w.component === component);
      if (!found) throw new Error(`the chart renders no ${component} Deployment`);
      return found;
    };
    const catalogEnv = {
      DATA_DIR: this.catalogDataDir,
      REDIS_URL: this.redis.url,
      ADMIN_TOKEN,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
      SHUTDOWN_DELAY_MS,
      LOG_LEVEL: 'warn',
    };
    for (const [component, list] of [
      ['catalog', this.catalogs],
      ['webhook-worker', this.workers],
    ] as const) {
      const workload = byComponent(component);
      for (let i = 1; i <= workload.replicas; i++) {
        const env = { ...catalogEnv, ...workload.env, ...(await this.ports('catalog')) };
        list.push(new Replica(workload, `${workload.name}-${i}`, 'catalog', env));
      }
    }
    // The first catalog seeds catalog.db alone; the others open it seeded.
    await this.catalogs[0]!.start();
    await Promise.all([...this.catalogs.slice(1), ...this.workers].map((r) => r.start()));
    this.catalogService = await TcpForwarder.start(this.catalogs.map((c) => c.port));

    const gateway = byComponent('gateway');
    for (let i = 1; i <= gateway.replicas; i++) {
      const env = {
        DATA_DIR: this.gatewayDataDir,
        REDIS_URL: this.redis.url,
        CATALOG_URL: this.catalogService.url,
        UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
        QUOTA_FREE: String(QUOTA_FREE),
        QUOTA_PRO: '100000000',
        QUOTA_ENTERPRISE: '100000000',
        REGISTRATIONS_PER_HOUR: '1000',
        TRUST_PROXY: '127.0.0.1',
        SHUTDOWN_DELAY_MS,
        LOG_LEVEL: 'warn',
        ...gateway.env,
        ...(await this.ports('gateway')),
      };
      const limit = i === gateway.replicas ? GATEWAY_OPEN_FILES_LIMIT : undefined;
      this.gateways.push(new Replica(gateway, `${gateway.name}-${i}`, 'gateway', env, limit));
    }
    await Promise.all(this.gateways.map((g) => g.start()));
    this.balancer = await NginxBalancer.start(this.gateways.map((g) => g.port));

    this.prometheus = await PrometheusServer.start({
      dir: this.prometheusDir,
      scrapeConfigs: scrapeConfigs(
        this.manifests,
        this.replicas.map((r) => r.pod),
      ),
      groups: ruleGroups(this.manifests),
    });
    this.alerts = new AlertWatcher(this.prometheus);
    this.alerts.start();
  }

  /**
   * Replaces a replica as a Kubernetes rolling update does: a gateway leaves the balancer's
   * endpoints first (a terminating pod leaves its Service's endpoints, and ingress-nginx stops
   * picking it, while its preStop and SHUTDOWN_DELAY_MS hold it serving), then gets SIGTERM,
   * drains and exits; its replacement takes its ports and joins the endpoints once ready. The
   * catalogs' TCP balancer, like kube-proxy for a connection already open, keeps sending to a
   * terminating catalog until it closes: the gateways' retries cover that. Resolves with the
   * exit code of the replaced process.
   */
  async restart(replica: Replica): Promise<number | null> {
    const endpoints = (except?: Replica) =>
      this.gateways.filter((g) => g !== except).map((g) => g.port);
    const gateway = this.gateways.includes(replica);
    if (gateway) await this.balancer.route(endpoints(replica));
    const code = await replica.stop('SIGTERM');
    await replica.start();
    if (gateway) await this.balancer.route(endpoints());
    return code;
  }

  /** A key made with the keys CLI, as an operator would. */
  async key(tier: 'free' | 'pro' | 'enterprise', name: string): Promise<string> {
    const created = (await keysCli(
      ['create', '--tier', tier, '--email', `${name}@topology.example`, '--name', name],
      this.keysCliEnv,
    )) as { apiKey: string };
    return created.apiKey;
  }

  /** `npm run catalog -- import <file>`, with the catalogs' environment; throws on failure. */
  async importTools(file: string): Promise<void> {
    const { code, stderr } = await runCli(CATALOG_CLI, ['import', file], this.catalogCliEnv);
    if (code !== 0) throw new Error(`catalog import exited ${code}: ${stderr}`);
  }

  /** A GET straight to one catalog replica, as the gateway sends it for a Pro caller. */
  catalogGet(replica: Replica, url: string): Promise<Response> {
    return fetch(`${replica.url}${url}`, {
      headers: {
        [INTERNAL_HEADERS.token]: INTERNAL_TOKEN,
        [INTERNAL_HEADERS.tier]: 'pro',
        [INTERNAL_HEADERS.keyId]: 'key-topology',
      },
    });
  }

  async stop(): Promise<void> {
    await this.alerts?.stop();
    await this.prometheus?.stop();
    await this.balancer?.stop();
    // Stalled processes must run again to hear SIGTERM.
    for (const replica of this.replicas) replica.process?.child.kill('SIGCONT');
    this.redis?.signal('SIGCONT');
    await Promise.all(this.gateways.map((g) => g.process?.stop()));
    await this.catalogService?.close();
    await Promise.all([...this.catalogs, ...this.workers].map((c) => c.process?.stop()));
    await this.redis?.stop();
    if (this.catalogDataDir) unmount(this.catalogDataDir);
    for (const dir of [this.gatewayDataDir, this.prometheusDir]) {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
