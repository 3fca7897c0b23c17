/**
 * Each image's own runtime dependencies, and its CycloneDX SBOM: run by the Dockerfile's build
 * stage in /app, around `npm prune --omit=dev`.
 *
 *   npm run images:deps -- trace                           # before the prune (needs @vercel/nft)
 *   node dist/scripts/images/dependency-sets.js assemble   # after it (Node's own modules only)
 *
 * `trace` follows, with @vercel/nft (node-file-trace), every require and import from each
 * image's entry points: its server and the operators' CLI, which loads every command group
 * (keys, catalog, seed), so both images hold what `tool-directory …` needs. It writes the
 * node_modules files each image needs to images/trace.json. Native add-ons built for another
 * platform (better-sqlite3 ships eight) are left out: the build stage runs on the runtime's base.
 *
 * `assemble`, once the prune has left the production dependencies only, splits the traced files
 * that are still there into three trees: node_modules (what both images load, the shared runtime
 * stage's layer) and images/<image>/node_modules (what only that image loads); the rest of
 * node_modules goes. It also writes images/<image>/sbom.cdx.json: the production SBOM
 * (images/sbom.cdx.json, from cyclonedx-npm) narrowed to the packages that image holds. It fails
 * if a package an image holds is missing from the SBOM.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

const root = process.cwd();
const out = path.join(root, 'images');
const TRACE = path.join(out, 'trace.json');
const SBOM = path.join(out, 'sbom.cdx.json');

/** What each image runs: its server and the CLI (package.json's bin). */
export const IMAGES = {
  gateway: ['dist/services/gateway/src/server.js', 'dist/scripts/cli/tool-directory.js'],
  catalog: ['dist/services/catalog/src/server.js', 'dist/scripts/cli/tool-directory.js'],
} as const;
type Image = keyof typeof IMAGES;
const names = Object.keys(IMAGES) as Image[];

/**
 * Code the tracer reaches that no process of these images runs, left out with what only it
 * requires (test/images/check.ts fails an image carrying a package no process loads):
 */
const NEVER_RUN = [
  // Fastify's inject(), for tests: light-my-request and its cookie parsers.
  'node_modules/light-my-request/**',
  // pino's transport worker thread: transports are only for LOG_PRETTY, which needs pino-pretty,
  // a development dependency; without it the services refuse LOG_PRETTY before logging.
  'node_modules/pino-pretty/**',
  'node_modules/pino/lib/worker.js',
  'node_modules/pino/lib/transport-stream.js',
  'node_modules/thread-stream/lib/worker.js',
  // readable-stream's AbortController for Node releases before 15.
  'node_modules/abort-controller/**',
  // @fastify/otel's glob matcher, for ignorePaths given as a glob; the services give a function
  // (services/shared/telemetry.ts).
  'node_modules/@fastify/otel/node_modules/minimatch/**',
  // gRPC's .proto loader, for the channelz and ORCA services a gRPC server offers; the OTLP
  // exporter is a client.
  'node_modules/@grpc/proto-loader/**',
];

/** The directory of the package a node_modules file belongs to (the innermost one). */
export function packageDir(file: string): string | undefined {
  return /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1];
}

const PLATFORM =
  /(?:^|[/_.-])(linuxmusl|linux|darwin|win32|freebsd|openbsd|android|sunos|aix)-(x64|arm64|arm|ia32|ppc64|s390x|riscv64|loong64)(?=[/_.-]|$)/;

/** A native add-on for another platform or C library than the one this runs on. */
export function foreignBinary(file: string, musl = isMusl()): boolean {
  if (!file.endsWith('.node')) return false;
  const platform = PLATFORM.exec(file);
  if (platform) {
    const [, os, arch] = platform;
    // A linux-<arch> package may hold both a glibc and a musl build (named so, below).
    const ours = os === 'linux' || (os === 'linuxmusl' && musl) ? 'linux' : os;
    if (ours !== process.platform || arch !== process.arch) return true;
    if (os === 'linux' && musl && path.basename(path.dirname(file)) === 'prebuilds') return true;
  }
  const libc = /[._-](glibc|musl)[._-]/.exec(path.basename(file))?.[1];
  return libc !== undefined && (libc === 'musl') !== musl;
}

function isMusl(): boolean {
  const header = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
  return process.platform === 'linux' && !header.header?.glibcVersionRuntime;
}

interface PackageJson {
  optionalDependencies?: Record<string, string>;
  os?: string[];
  cpu?: string[];
}
const readPackage = (dir: string) =>
  JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as PackageJson;

/** Every file under a directory (relative to the root), symbolic links included. */
function filesUnder(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .map((entry) => path.join(dir, entry))
    .filter((file) => !lstatSync(path.join(root, file)).isDirectory());
}

/**
 * The platform builds a traced package loads by a name it computes, which no tracer can follow
 * (msgpackr-extract's `@msgpackr-extract/msgpackr-extract-linux-x64`): its installed optional
 * dependencies that declare `os` or `cpu`, with their files for this platform.
 */
function platformBuilds(files: Iterable<string>): string[] {
  const found: string[] = [];
  const dirs = new Set([...files].map((f) => packageDir(f)).filter((d) => d !== undefined));
  for (const dir of dirs) {
    for (const name of Object.keys(readPackage(dir).optionalDependencies ?? {})) {
      // Node's lookup: the package's own node_modules, then each enclosing one.
      const candidates = [`${dir}/node_modules/${name}`];
      for (let at = dir; at.includes('node_modules/');) {
        at = at.slice(0, at.lastIndexOf('node_modules/') - 1);
        candidates.push(`${at ? `${at}/` : ''}node_modules/${name}`);
      }
      const installed = candidates.find((c) => existsSync(path.join(root, c, 'package.json')));
      if (!installed) continue;
      const manifest = readPackage(installed);
      if (manifest.os || manifest.cpu) found.push(...filesUnder(installed));
    }
  }
  return found;
}

async function trace(): Promise<void> {
  const { nodeFileTrace } = await import('@vercel/nft');
  const result: Record<string, string[]> = {};
  for (const image of names) {
    const { fileList } = await nodeFileTrace([...IMAGES[image]], { base: root, ignore: NEVER_RUN });
    const files = [...fileList].filter((file) => file.startsWith('node_modules/'));
    result[image] = [...new Set([...files, ...platformBuilds(files)])]
      .filter((file) => !foreignBinary(file))
      .sort();
  }
  mkdirSync(out, { recursive: true });
  writeFileSync(TRACE, `${JSON.stringify(result, null, 1)}\n`);
  for (const image of names) console.log(`trace: ${image}: ${result[image]!.length} files`);
}

interface Component {
  'bom-ref'?: string;
  name: string;
  group?: string;
  version?: string;
  properties?: { name: string; value: string }[];
}
interface Bom {
  metadata: { component?: { 'bom-ref'?: string }; properties?: { name: string; value: string }[] };
  components: Component[];
  dependencies?: { ref: string; dependsOn?: string[] }[];
}

const pathOf = (c: Component) =>
  c.properties?.find((p) => p.name === 'cdx:npm:package:path')?.value;

/** The production SBOM narrowed to the packages whose files one image holds. */
function narrow(bom: Bom, image: Image, dirs: Set<string>): Bom {
  const components = bom.components.filter((c) => dirs.has(pathOf(c) ?? ''));
  const listed = new Set(components.map(pathOf));
  const unlisted = [...dirs].filter((d) => !listed.has(d));
  if (unlisted.length > 0) {
    throw new Error(`${image}: packages missing from the SBOM: ${unlisted.join(', ')}`);
  }
  const refs = new Set(components.map((c) => c['bom-ref']));
  refs.add(bom.metadata.component?.['bom-ref']);
  return {
    ...bom,
    metadata: {
      ...bom.metadata,
      properties: [
        ...(bom.metadata.properties ?? []),
        { name: 'tool-directory:image', value: `tool-directory-${image}` },
      ],
    },
    components,
    dependencies: bom.dependencies
      ?.filter((d) => refs.has(d.ref))
      .map((d) => ({ ...d, dependsOn: d.dependsOn?.filter((r) => refs.has(r)) ?? [] })),
  };
}

/** Moves a file or symbolic link from under `from` to the same path under `to`. */
function move(file: string, from: string, to: string): void {
  const target = path.join(to, file);
  mkdirSync(path.dirname(target), { recursive: true });
  const source = path.join(from, file);
  if (lstatSync(source).isSymbolicLink()) {
    symlinkSync(readlinkSync(source), target);
    rmSync(source);
  } else {
    renameSync(source, target);
  }
}

function size(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).reduce((sum, entry) => {
    const stat = lstatSync(path.join(dir, entry));
    return sum + (stat.isFile() ? stat.size : 0);
  }, 0);
}

function assemble(): void {
  const traced = JSON.parse(readFileSync(TRACE, 'utf8')) as Record<Image, string[]>;
  // What the prune kept: a traced file of a development dependency (an optional require) goes.
  const kept = Object.fromEntries(
    names.map((image) => [image, new Set(traced[image].filter((f) => existsSync(f)))]),
  ) as Record<Image, Set<string>>;
  const [first, ...others] = names.map((image) => kept[image]);
  const common = new Set([...first!].filter((f) => others.every((set) => set.has(f))));
  const shared = path.join(out, 'shared');
  for (const file of common) move(file, root, shared);
  for (const image of names) {
    for (const file of kept[image]) if (!common.has(file)) move(file, root, path.join(out, image));
  }
  // The untraced rest of the pruned tree goes; the shared files take its place.
  rmSync(path.join(root, 'node_modules'), { recursive: true, force: true });
  mkdirSync(path.join(shared, 'node_modules'), { recursive: true });
  renameSync(path.join(shared, 'node_modules'), path.join(root, 'node_modules'));

  const bom = JSON.parse(readFileSync(SBOM, 'utf8')) as Bom;
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  console.log(`assemble: shared by both images: ${common.size} files, ${mb(size('node_modules'))}`);
  for (const image of names) {
    const dirs = new Set([...kept[image]].map((f) => packageDir(f)!));
    writeFileSync(
      path.join(out, image, 'sbom.cdx.json'),
      `${JSON.stringify(narrow(bom, image, dirs), null, 2)}\n`,
    );
    const own = path.join(out, image, 'node_modules');
    mkdirSync(own, { recursive: true });
    console.log(
      `assemble: ${image}: ${dirs.size} packages, ${kept[image].size} files; its own ${mb(size(own))}`,
    );
  }
}

/** The command line: `trace` or `assemble`. */
async function main(step: string | undefined): Promise<void> {
  if (step === 'trace') return trace();
  if (step === 'assemble') return assemble();
  throw new Error('usage: dependency-sets.js trace|assemble');
}

if (require.main === module) {
  main(process.argv[2]).catch((err: unknown) => {
    console.error(`dependency-sets: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  });
}
