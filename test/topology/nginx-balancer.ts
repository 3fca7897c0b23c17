import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { killOnExit } from '../support/child-processes';
import { freePort, waitFor } from '../support/ports';

/** Answers the backends the running configuration routes to, so a reload can be waited for. */
const BACKENDS_PATH = '/__balancer/backends';

/**
 * Debian's nginx in front of the gateways, configured as ingress-nginx is by default: HTTP/1.1
 * keep-alive on both sides, round robin over the endpoints, and a request whose backend refuses
 * the connection or fails before answering goes to the next one (`proxy_next_upstream error
 * timeout`, never a non-idempotent request once sent). A backend is never marked failed
 * (`max_fails=0`): the endpoint list says which pods take traffic. `route()` changes that list,
 * as Kubernetes does when a pod terminates or becomes ready (ingress-nginx then stops or starts
 * picking it); stock nginx takes the new list by a graceful reload.
 */
export class NginxBalancer {
  private readonly output: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly dir: string,
  ) {
    const keep = (chunk: Buffer) => this.output.push(chunk.toString());
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private static configure(dir: string, port: number, backends: number[]): void {
    writeFileSync(
      path.join(dir, 'nginx.conf'),
      `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/temp/body;
  proxy_temp_path ${dir}/temp/proxy;
  fastcgi_temp_path ${dir}/temp/fastcgi;
  uwsgi_temp_path ${dir}/temp/uwsgi;
  scgi_temp_path ${dir}/temp/scgi;
  keepalive_timeout 75s;
  upstream gateways {
${backends.map((b) => `    server 127.0.0.1:${b} max_fails=0;`).join('\n')}
    keepalive 32;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${port};
    location = ${BACKENDS_PATH} {
      return 200 "${backends.join(',')}";
    }
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 3;
      proxy_connect_timeout 5s;
      proxy_read_timeout 60s;
      proxy_buffering off;
    }
  }
}
`,
    );
  }

  static async start(backends: number[]): Promise<NginxBalancer> {
    const dir = mkdtempSync(path.join(tmpdir(), 'td-nginx-'));
    mkdirSync(path.join(dir, 'temp'));
    const port = await freePort();
    NginxBalancer.configure(dir, port, backends);
    const child = killOnExit(
      spawn('nginx', ['-e', 'stderr', '-p', dir, '-c', path.join(dir, 'nginx.conf')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    const balancer = new NginxBalancer(child, port, dir);
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (err) => reject(new Error(`nginx could not start: ${err.message}`)));
      child.once('exit', (code) =>
        reject(new Error(`nginx exited with ${code}:\n${balancer.output.join('')}`)),
      );
    });
    failed.catch(() => undefined);
    await Promise.race([failed, balancer.routing(backends)]);
    return balancer;
  }

  /** Waits until new connections are routed to `backends`. */
  private routing(backends: number[]): Promise<true> {
    return waitFor(
      async () => {
        const answer = await fetch(`${this.url}${BACKENDS_PATH}`);
        return (await answer.text()) === backends.join(',') ? true : undefined;
      },
      { what: `nginx routing to ${backends.join(', ')}` },
    );
  }

  /** Routes new requests to these endpoints only; requests under way finish where they are. */
  async route(backends: number[]): Promise<void> {
    NginxBalancer.configure(this.dir, this.port, backends);
    this.child.kill('SIGHUP');
    await this.routing(backends);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    // SIGQUIT: nginx's graceful stop.
    this.child.kill('SIGQUIT');
    await exited;
    rmSync(this.dir, { recursive: true, force: true });
  }
}
