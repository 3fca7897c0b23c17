import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { killOnExit } from '../test/support/child-processes';
import { freePort, waitFor } from '../test/support/ports';

export const NGINX = '/usr/sbin/nginx';

/**
 * Debian's nginx as the floor of proxying on the machine: one worker, a keep-alive upstream
 * pool to the catalog, the internal headers added, the default combined access log written to
 * a file. A fixed reference, deliberately untuned beyond what a keep-alive proxy needs.
 */
export interface Nginx {
  url: string;
  /** The worker process: it does the proxying, so its CPU time is what is measured. */
  workerPid: number;
  masterPid: number;
  stop(): Promise<void>;
}

function config(dir: string, port: number, upstream: URL, headers: Record<string, string>) {
  const setHeaders = Object.entries(headers)
    .map(([name, value]) => `      proxy_set_header ${name} "${value}";`)
    .join('\n');
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  access_log ${dir}/access.log combined;
  upstream catalog {
    server ${upstream.host};
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://catalog;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
${setHeaders}
    }
  }
}
`;
}

/** The pids of a process's children (Linux, /proc), to find nginx's worker under its master. */
function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .split(' ')
    .filter(Boolean)
    .map(Number);
}

/** Starts nginx in front of `upstreamUrl`, or returns null when Debian's nginx is not installed. */
export async function startNginx(
  upstreamUrl: string,
  headers: Record<string, string>,
): Promise<Nginx | null> {
  if (!existsSync(NGINX)) return null;
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-nginx-'));
  const port = await freePort();
  writeFileSync(path.join(dir, 'nginx.conf'), config(dir, port, new URL(upstreamUrl), headers));
  const child: ChildProcess = killOnExit(
    spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', `${dir}/error.log`], {
      stdio: ['ignore', 'inherit', 'inherit'],
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const died = new Promise<never>((_, reject) =>
    child.once('exit', (code) =>
      reject(new Error(`nginx exited with ${code}: see ${path.join(dir, 'error.log')}`)),
    ),
  );
  died.catch(() => undefined);
  await Promise.race([
    died,
    waitFor(async () => ((await fetch(`${url}/healthz`)).status > 0 ? true : undefined), {
      what: 'nginx',
    }),
  ]);
  const [workerPid] = childPids(child.pid!);
  if (workerPid === undefined) throw new Error('nginx runs without a worker process');
  // A killed master leaves its worker running: the worker goes with this process too.
  const killWorker = () => {
    try {
      process.kill(workerPid, 'SIGKILL');
    } catch {
      // Already gone with its master.
    }
  };
  process.once('exit', killWorker);
  return {
    url,
    workerPid,
    masterPid: child.pid!,
    /** Stops nginx and removes its directory (the access log grows by megabytes a run). */
    stop: async () => {
      process.off('exit', killWorker);
      if (child.exitCode === null) {
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGQUIT');
        // A graceful stop: the master exits after its worker.
        await exited;
      }
      rmSync(dir, { recursive: true });
    },
  };
}

/** `nginx/1.22.1`, for the record of a run (nginx -v prints it on stderr). */
export function nginxVersion(): string {
  const printed = spawnSync(NGINX, ['-v'], { encoding: 'utf8' }).stderr;
  return /nginx\/\S+/.exec(printed)?.[0] ?? printed.trim();
}
