import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { killOnExit } from '../support/child-processes';
import { freePort, waitFor } from '../support/ports';

/**
 * Debian's nginx in front of the gateways, configured as ingress-nginx is by default: HTTP/1.1
 * keep-alive on both sides, round robin over the backends, and a request whose backend refuses
 * the connection or fails before answering goes to the next one (`proxy_next_upstream error
 * timeout`, never a non-idempotent request once sent). A backend is never marked failed
 * (`max_fails=0`): in Kubernetes the endpoint list, not the balancer, says which pods take
 * traffic, and a replica restarting on its port is back as soon as it listens.
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

  static async start(backends: number[]): Promise<NginxBalancer> {
    const dir = mkdtempSync(path.join(tmpdir(), 'td-nginx-'));
    mkdirSync(path.join(dir, 'temp'));
    const port = await freePort();
    const conf = path.join(dir, 'nginx.conf');
    writeFileSync(
      conf,
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
    const child = killOnExit(
      spawn('nginx', ['-e', 'stderr', '-p', dir, '-c', conf], {
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
    await Promise.race([
      failed,
      // Any answer will do: nginx listens (the gateways may answer 404 to /).
      waitFor(async () => ((await fetch(`${balancer.url}/healthz`)).status ? true : undefined), {
        what: 'nginx',
      }),
    ]);
    return balancer;
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
