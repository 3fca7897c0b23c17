import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { killOnExit } from '../support/child-processes';
import { freePort, waitFor } from '../support/ports';
import { SERVICE_START_MS } from '../support/waits';
import type { RuleGroup } from './prometheus-from-chart';

export type Labels = Record<string, string>;

export interface Sample {
  metric: Labels;
  value: [number, string];
}

export interface Series {
  metric: Labels;
  values: [number, string][];
}

export interface ActiveAlert {
  labels: Labels & { alertname: string };
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

/** How often this Prometheus evaluates the rules. */
export const EVALUATION_INTERVAL_S = 1;
/** How often the AlertWatcher asks Prometheus for the active alerts. */
export const ALERT_POLL_MS = 250;

export interface RuleState {
  name: string;
  type: 'alerting' | 'recording';
  query: string;
  health: 'ok' | 'err' | 'unknown';
  lastError?: string;
  state?: 'inactive' | 'pending' | 'firing';
}

/**
 * A real Prometheus (Debian's `prometheus` package) of the test's own, on a free port, with its
 * data in `dir`: it scrapes what `scrapeConfigs` says and evaluates `groups` every second. Fails
 * (never skips) when the binary is missing.
 */
export class PrometheusServer {
  private readonly output: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    const keep = (chunk: Buffer) => this.output.push(chunk.toString());
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start({
    dir,
    scrapeConfigs,
    groups,
  }: {
    dir: string;
    scrapeConfigs: Record<string, unknown>[];
    groups: RuleGroup[];
  }): Promise<PrometheusServer> {
    const rules = path.join(dir, 'rules.yml');
    const config = path.join(dir, 'prometheus.yml');
    writeFileSync(rules, stringify({ groups }));
    writeFileSync(
      config,
      stringify({
        // The Operator's Prometheus sets the evaluation interval; a second suits a test.
        global: { evaluation_interval: `${EVALUATION_INTERVAL_S}s` },
        rule_files: [rules],
        scrape_configs: scrapeConfigs,
      }),
    );
    const port = await freePort();
    const child = killOnExit(
      spawn(
        'prometheus',
        [
          `--config.file=${config}`,
          `--storage.tsdb.path=${path.join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    );
    const server = new PrometheusServer(child, port);
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (err) => reject(new Error(`prometheus could not start: ${err.message}`)));
      child.once('exit', (code) =>
        reject(new Error(`prometheus exited with ${code}:\n${server.output.join('')}`)),
      );
    });
    failed.catch(() => undefined);
    await Promise.race([
      failed,
      waitFor(async () => ((await fetch(`${server.url}/-/ready`)).ok ? true : undefined), {
        what: 'prometheus /-/ready',
        timeoutMs: SERVICE_START_MS,
      }),
    ]);
    return server;
  }

  private async api<T>(route: string, params: Record<string, string> = {}): Promise<T> {
    const response = await fetch(`${this.url}/api/v1/${route}?${new URLSearchParams(params)}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success')
      throw new Error(`${route} ${JSON.stringify(params)}: ${body.error}`);
    return body.data;
  }

  /** An instant query: the series and their value now, or at `at` (ms). */
  async query(expr: string, at?: number): Promise<Sample[]> {
    const data = await this.api<{ resultType: string; result: Sample[] }>('query', {
      query: expr,
      ...(at !== undefined && { time: String(at / 1000) }),
    });
    if (data.resultType !== 'vector') throw new Error(`${expr} gives a ${data.resultType}`);
    return data.result;
  }

  async queryRange(expr: string, start: number, end: number, stepS: number): Promise<Series[]> {
    const data = await this.api<{ result: Series[] }>('query_range', {
      query: expr,
      start: String(start / 1000),
      end: String(end / 1000),
      step: `${stepS}s`,
    });
    return data.result;
  }

  /** The alerts pending or firing now. */
  async alerts(): Promise<ActiveAlert[]> {
    return (await this.api<{ alerts: ActiveAlert[] }>('alerts')).alerts;
  }

  async rules(): Promise<RuleState[]> {
    const data = await this.api<{ groups: { rules: RuleState[] }[] }>('rules');
    return data.groups.flatMap((g) => g.rules);
  }

  async labelValues(label: string, match: string): Promise<string[]> {
    return this.api<string[]>(`label/${label}/values`, { 'match[]': match });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await exited;
  }
}

/**
 * The labels the outermost aggregation of `expr` keeps (its first `by (...)`, without `le`,
 * which histogram_quantile consumes): every series it returns must carry each of them.
 */
export function groupingLabels(expr: string): string[] {
  const by = /\bby\s*\(([^)]*)\)/.exec(expr)?.[1] ?? '';
  return by
    .split(',')
    .map((label) => label.trim())
    .filter((label) => label && label !== 'le');
}

/** One alert's observed life: when it was first seen pending, firing, and gone again. */
export interface AlertHistory {
  alertname: string;
  labels: Labels;
  pendingAt?: number;
  firingAt?: number;
  resolvedAt?: number;
  value?: string;
}

const key = (labels: Labels) =>
  JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

/**
 * Watches /api/v1/alerts every ALERT_POLL_MS for the whole suite and keeps each alert's history, so a
 * test can wait for an alert to be pending, then firing, then gone, on Prometheus's word alone.
 * An alert that comes back after it was gone starts a new history.
 */
export class AlertWatcher {
  readonly histories: AlertHistory[] = [];
  private readonly current = new Map<string, AlertHistory>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  lastError: unknown;

  constructor(private readonly prometheus: PrometheusServer) {}

  start(): void {
    const tick = () => {
      this.polling = this.poll()
        .catch((err: unknown) => {
          this.lastError = err;
        })
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, ALERT_POLL_MS);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  private async poll(): Promise<void> {
    const alerts = await this.prometheus.alerts();
    const now = Date.now();
    const seen = new Set<string>();
    for (const alert of alerts) {
      const id = key(alert.labels);
      seen.add(id);
      let history = this.current.get(id);
      if (!history) {
        const { alertname, ...labels } = alert.labels;
        history = { alertname, labels };
        this.current.set(id, history);
        this.histories.push(history);
      }
      history.value = alert.value;
      if (alert.state === 'pending') history.pendingAt ??= now;
      if (alert.state === 'firing') history.firingAt ??= now;
    }
    for (const [id, history] of this.current) {
      if (seen.has(id)) continue;
      history.resolvedAt = now;
      this.current.delete(id);
    }
  }

  /** The histories of an alert whose labels include `labels`, oldest first. */
  of(alertname: string, labels: Labels = {}): AlertHistory[] {
    return this.histories.filter(
      (h) =>
        h.alertname === alertname && Object.entries(labels).every(([k, v]) => h.labels[k] === v),
    );
  }

  /** Alerts pending or firing now. */
  active(): AlertHistory[] {
    return [...this.current.values()];
  }

  /**
   * Waits until the alert fires (a history since `since`) and returns that history; `timeoutMs`
   * is the caller's, from the alert's expression.
   */
  firing(
    alertname: string,
    { labels = {}, since = 0, timeoutMs }: { labels?: Labels; since?: number; timeoutMs: number },
  ): Promise<AlertHistory> {
    return waitFor(
      async () =>
        this.of(alertname, labels).find(
          (h) => h.firingAt !== undefined && (h.pendingAt ?? h.firingAt) >= since,
        ),
      { what: `${alertname} ${JSON.stringify(labels)} firing`, timeoutMs, intervalMs: 100 },
    );
  }

  /** Waits until this history's alert is no longer pending nor firing. */
  resolved(history: AlertHistory, timeoutMs: number): Promise<number> {
    return waitFor(async () => history.resolvedAt, {
      what: `${history.alertname} ${JSON.stringify(history.labels)} resolved`,
      timeoutMs,
      intervalMs: 100,
    });
  }
}
