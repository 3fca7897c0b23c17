import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Which modules an image's processes load, recorded inside the running containers: a module
 * hook (Node's `module.registerHooks`, given by `--import` in NODE_OPTIONS, so every process of
 * the container records: the server, each `tool-directory …` run with `docker exec`, the seed
 * Job) appends each file it resolves, and each bare name it fails to resolve, to a file of its
 * own in a directory mounted from the host. Appended as they load, so a process that is killed
 * has still told what it loaded.
 */
const RECORDER = `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
const out = \`\${process.env.TD_MODULES_DIR}/\${process.pid}-\${threadId}-\${Date.now()}.txt\`;
appendFileSync(out, \`#argv \${JSON.stringify(process.argv.slice(1))}\\n\`);
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    let result;
    try {
      result = next(specifier, context);
    } catch (err) {
      appendFileSync(out, \`!\${specifier}\\n\`);
      throw err;
    }
    if (result.url.startsWith('file:') && !seen.has(result.url)) {
      seen.add(result.url);
      appendFileSync(out, \`\${result.url}\\n\`);
    }
    return result;
  },
});
`;

const MOUNT = '/td-modules';

/**
 * A directory (writable by the containers' uid) with the recorder, and the `docker run` options
 * that make a container's processes record into it.
 */
export function moduleRecorder(dir: string): { dockerArgs: string[] } {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  writeFileSync(path.join(dir, 'record.mjs'), RECORDER);
  return {
    dockerArgs: [
      '-v',
      `${dir}:${MOUNT}`,
      '-e',
      `NODE_OPTIONS=--import=${MOUNT}/record.mjs`,
      '-e',
      `TD_MODULES_DIR=${MOUNT}`,
    ],
  };
}

export interface Recorded {
  /** The process's command line, from the script on. */
  argv: string[];
  /** Top-level packages of /app/node_modules it loaded a file of. */
  packages: Set<string>;
  /** Bare names it failed to resolve (optional requires, most of them). */
  unresolved: Set<string>;
}

/** The package a bare name or a node_modules path names: `@scope/name` or `name`. */
export const packageName = (spec: string) => /^(@[^/]+\/[^/]+|[^/@][^/]*)/.exec(spec)?.[1];

/** What each process recorded in `dir`. */
export function recorded(dir: string): Recorded[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .map((file) => {
      const lines = readFileSync(path.join(dir, file), 'utf8').split('\n');
      const result: Recorded = { argv: [], packages: new Set(), unresolved: new Set() };
      for (const line of lines) {
        if (line.startsWith('#argv ')) result.argv = JSON.parse(line.slice(6)) as string[];
        else if (line.startsWith('!')) {
          const spec = line.slice(1);
          if (!spec.startsWith('.') && !spec.startsWith('/') && !spec.startsWith('node:')) {
            result.unresolved.add(packageName(spec) ?? spec);
          }
        } else if (line.startsWith('file:///app/node_modules/')) {
          const name = packageName(line.slice('file:///app/node_modules/'.length));
          if (name) result.packages.add(name);
        }
      }
      return result;
    });
}

/** The names of the packages `npm ci --omit=dev` installs (at any depth), from the lockfile. */
export function productionPackages(lockfile: string): Set<string> {
  const lock = JSON.parse(readFileSync(lockfile, 'utf8')) as {
    packages: Record<string, { dev?: boolean; name?: string }>;
  };
  const names = new Set<string>();
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (!key || entry.dev) continue;
    const name = entry.name ?? packageName(key.slice(key.lastIndexOf('node_modules/') + 13));
    if (name) names.add(name);
  }
  return names;
}

/**
 * The verdict on one image: the packages its processes failed to load, and never loaded, though
 * a production install has them (the image lacks them), and the top-level packages it carries
 * that none of its processes loaded.
 */
export function judge(
  carried: string[],
  processes: Recorded[],
  production: Set<string>,
): { missing: string[]; unused: string[]; loaded: Set<string> } {
  const loaded = new Set(processes.flatMap((p) => [...p.packages]));
  // A name that failed to resolve from one place and loaded from another was a probe.
  const missing = [
    ...new Set(
      processes.flatMap((p) =>
        [...p.unresolved].filter((n) => production.has(n) && !loaded.has(n)),
      ),
    ),
  ].sort();
  const unused = carried.filter((name) => !loaded.has(name)).sort();
  return { missing, unused, loaded };
}
