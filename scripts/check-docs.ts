/**
 * The docs check: `npm run check:docs` (and `.ci/run`). The documentation is a reference for
 * the product as it is, readable from this repository alone. It fails, naming file and line, on
 *
 *   - a relative link to a file that does not exist, or to a heading the file does not have
 *     (GitHub's anchors), or leaving the repository;
 *   - a reference to a file outside the repository (the shared folder beside it, the spec file,
 *     one of its sections or a bare identifier of one, "(B4)", "per B12", "the A 2.1 fields"):
 *     the spec is an internal document, so a doc or comment states the rule itself;
 *   - the wording of a work log: sessions, issue numbers, numbered, lettered or dated runs ("run
 *     1", "this run", "in our run", "today's run"), dates (history belongs in CHANGELOG.md and
 *     git; the figures' method and current values in docs/performance.md);
 *   - a repository path named in backticks or in prose (`services/shared/contract.ts`,
 *     `plugins/compression.ts`) that does not exist, or an `npm run` script package.json lacks.
 *
 *   - in source files and the chart, a reference to a doc (`docs/api.md#search`) or a
 *     repository path whose file or heading does not exist, the same outside references, and
 *     run-log wording in comments (the strings of code are left alone).
 *
 * What is checked is the list TARGETS: globs and the checks each gets. The text checks read any
 * file, the link check only Markdown.
 *
 *   npm run check:docs
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import * as ts from 'typescript';

export type CheckName =
  'links' | 'references' | 'outside' | 'history' | 'issues' | 'paths' | 'comments';

export interface DocTarget {
  globs: string[];
  checks: CheckName[];
}

export const TARGETS: DocTarget[] = [
  {
    globs: [
      'README.md',
      'docs/**/*.md',
      'services/*/src/README.md',
      'helm/tool-directory/README.md',
      'k6/**/*.md',
    ],
    checks: ['links', 'outside', 'history', 'paths'],
  },
  // History is what a changelog is for; its release headings carry their dates.
  { globs: ['CHANGELOG.md'], checks: ['links', 'outside'] },
  // Comments point at the docs by path and heading, never at the spec.
  {
    globs: [
      '{gateway,services,scripts,bench,test,k6}/**/*.{ts,js,html,css,json}',
      'helm/**/*.{yaml,yml,tpl,json}',
      'Dockerfile',
      '.ci/run',
    ],
    checks: ['references', 'outside', 'issues', 'comments'],
  },
];

/**
 * Files (and folders) that name the patterns they look for, or hold broken references on purpose.
 */
const EXEMPT = [
  'scripts/check-docs.ts',
  'test/docs/check-docs.test.ts',
  'test/docs/fixtures/',
  'test/helm/runbooks.test.ts',
];

export interface Finding {
  file: string;
  line: number;
  message: string;
}

const SKIPPED_DIRS = new Set(['.git', 'node_modules', 'dist', 'coverage', '.tools']);

/** picomatch's globs: `**` spans folders, `*` stays within one, `{a,b}` is either. */
export function globToRegExp(glob: string): RegExp {
  return picomatch.makeRe(glob, { dot: true });
}

function walk(root: string, dir = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const relative = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) files.push(...walk(root, relative));
    } else if (entry.isFile()) {
      files.push(relative);
    }
  }
  return files;
}

/**
 * The repository's files: what git tracks or would track, so a local run's data or results
 * (git-ignored) never count as repository paths; every file below `root` outside git.
 */
function repositoryFiles(root: string): string[] {
  const listed = spawnSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '-z'],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  if (listed.status !== 0) return walk(root);
  return listed.stdout.split('\0').filter((file) => file && existsSync(path.join(root, file)));
}

/** GitHub's anchor of a heading's text: its rendered words, lower case, spaces as hyphens. */
export function headingAnchor(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(^|[^\w])[*_]{1,3}(?=\S)|(?<=\S)[*_]{1,3}(?=[^\w]|$)/g, '$1')
    .replace(/<[^>]+>/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

interface MarkdownLine {
  number: number;
  text: string;
  /** Inside a fenced code block. */
  code: boolean;
}

function markdownLines(markdown: string): MarkdownLine[] {
  let fence: string | null = null;
  return markdown.split('\n').map((text, i) => {
    const opening = /^\s*(```+|~~~+)/.exec(text)?.[1];
    if (opening && (fence === null || opening.startsWith(fence))) {
      fence = fence === null ? opening : null;
      return { number: i + 1, text, code: true };
    }
    return { number: i + 1, text, code: fence !== null };
  });
}

/** Every heading's anchor, numbered as GitHub numbers repeated ones (`-1`, `-2`). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text, code } of markdownLines(markdown)) {
    const heading = code ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(text)?.[1];
    if (!heading) continue;
    const anchor = headingAnchor(heading);
    const count = seen.get(anchor) ?? 0;
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
    seen.set(anchor, count + 1);
  }
  return anchors;
}

/** Prose of a line: inline code removed (it quotes, it does not narrate). */
function prose(line: MarkdownLine): string {
  return line.code ? '' : line.text.replace(/`[^`]*`/g, '``');
}

const OUTSIDE_REFERENCES: Array<[RegExp, string]> = [
  [/\.\.\/shared\b/, 'a file outside the repository (../shared)'],
  [
    /\bSPEC\.md\b/,
    'the spec file, which is outside the repository: state the rule, or link docs/api.md',
  ],
  [
    /\bSPEC\s+(?:[AB]\s?\d|Part)/,
    'a spec section, which is outside the repository: state the rule, or link docs/api.md',
  ],
  // "(B4)", "per B12", "B6's fields", "the A 2.1 fields", "Part B": a spec section by its
  // number alone. Not "A 304" nor "A 1.5 s timeout" (no section number), nor a hex "#B4".
  [
    /(?<![\w.#%-]|\bSPEC\s+)(?:[AB]\d{1,2}(?:\.\d+)*|[AB] \d{1,2}\.\d+(?![\d.]*\s*(?:s|ms|µs|%|×|x|[KMG]i?B)\b)|Part [AB])(?!\w|-\d)/,
    'a spec identifier ("B4", "A 2.1"): the spec is not in the repository; state the rule itself',
  ],
];

/** Issue references, checked in source comments too ("session" is a word of code there). */
const ISSUE_WORDING: Array<[RegExp, string]> = [
  [/\bissues?\s*#?\d+/i, 'an issue number: say what is, history goes to CHANGELOG.md'],
  [/\([\w -]*\bissue\b[^)]*\)/i, 'an issue reference: say what is, history goes to CHANGELOG.md'],
];

const MONTHS =
  'Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?';

/** MCP names its protocol revisions by date: a revision's name is a version, not a date. */
const MCP_REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];

const ISO_DATE: [RegExp, string] = [
  new RegExp(`\\b(?!(?:${MCP_REVISIONS.join('|')})\\b)20\\d\\d-\\d\\d-\\d\\d\\b(?!T)`),
  'a date (a dated run or change): give the current state; history goes to CHANGELOG.md',
];

/**
 * A run log's wording, in docs and in source comments: which run measured what is history; a
 * reference gives the method and the current figures. "run" alone stays a word of code and of
 * operations ("the Job runs", "containers that run as uid 1000", "runs 3 times").
 */
const RUN_WORDING: Array<[RegExp, string]> = [
  [
    /\bruns? (?:\d+|[A-Z])(?:(?:, | and | to |–)(?:\d+|[A-Z]))*(?![\w'])(?![\d.,]*\s*(?:times|×|x|s|ms|µs|seconds?|minutes?|hours?|%)(?![\w]))/,
    'a dated or lettered run: give the method and the current figures',
  ],
  [
    /\b(?:(?:this|the last|the latest|the previous|today's|yesterday's|our) run(?![\w-])|(?:these|those|our|earlier|previous|the last|the latest|today's) runs\b)/i,
    'run-log wording ("this run", "our run"): give the method and the current figures',
  ],
  ISO_DATE,
  [
    // A support window's end ("until April 2028") is a fact of the product, not its history.
    new RegExp(
      `(?<!\\b(?:until|till|through) )\\b(?:(?:${MONTHS})\\.? (?:\\d{1,2}(?:st|nd|rd|th)?,? )?20\\d\\d|\\d{1,2} (?:${MONTHS}) 20\\d\\d)\\b`,
    ),
    'a date (a dated run or change): give the current state; history goes to CHANGELOG.md',
  ],
  [
    /\b(?:last (?:night|week|month)|this (?:morning|afternoon|evening|week|month)|as of (?:today|now)|at the time of writing)\b/i,
    'dated wording: give the current state; history goes to CHANGELOG.md',
  ],
];

const HISTORY_WORDING: Array<[RegExp, string]> = [
  [/\bsessions?\b/i, 'work-log wording ("session"): say what is, history goes to CHANGELOG.md'],
  ...ISSUE_WORDING,
  [
    /(^|[\s(])#\d+(?![-\w])/,
    'an issue or pull-request number: say what is, history goes to CHANGELOG.md',
  ],
  ...RUN_WORDING,
];

function textFindings(
  file: string,
  lines: MarkdownLine[],
  comments: string[],
  checks: CheckName[],
): Finding[] {
  const findings: Finding[] = [];
  for (const line of lines) {
    // A module path is code, not a reference: services/shared is this repository's.
    const text = line.text.replace(
      /(?:\bfrom\s+|^import\s+|\b(?:require|import)\()(['"])[^'"]*\1/g,
      '',
    );
    const comment = comments[line.number - 1] ?? '';
    const rules = [
      ...(checks.includes('outside') ? OUTSIDE_REFERENCES.map((r) => [r, text] as const) : []),
      ...(checks.includes('history') ? HISTORY_WORDING.map((r) => [r, prose(line)] as const) : []),
      ...(checks.includes('issues') ? ISSUE_WORDING.map((r) => [r, text] as const) : []),
      ...(checks.includes('comments') ? commentRules(file).map((r) => [r, comment] as const) : []),
    ];
    for (const [[pattern, message], text] of rules) {
      if (pattern.test(text)) findings.push({ file, line: line.number, message });
    }
  }
  return findings;
}

/** Run-log wording in comments; a test's comments may date its data ("the 8th request on …"). */
function commentRules(file: string): Array<[RegExp, string]> {
  return file.startsWith('test/') ? RUN_WORDING.filter((rule) => rule !== ISO_DATE) : RUN_WORDING;
}

/**
 * The comments of a source file, line by line (its strings and code left out: a test's data may
 * hold a date). TypeScript's parser finds them, so a `//` in a string or a regular expression is
 * no comment. Files other than TypeScript and JavaScript are read whole, JSON not at all (data).
 */
function commentsOf(file: string, lines: MarkdownLine[]): string[] {
  if (file.endsWith('.json')) return [];
  if (!/\.[cm]?[jt]s$/.test(file)) return lines.map((line) => line.text);
  const source = lines.map((line) => line.text).join('\n');
  const parsed = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false);
  const ranges = new Map<number, ts.CommentRange>();
  const visit = (node: ts.Node) => {
    for (const range of ts.getLeadingCommentRanges(source, node.pos) ?? []) {
      ranges.set(range.pos, range);
    }
    for (const range of ts.getTrailingCommentRanges(source, node.end) ?? []) {
      ranges.set(range.pos, range);
    }
    for (const child of node.getChildren(parsed)) visit(child);
  };
  visit(parsed);
  const comments = lines.map(() => '');
  for (const range of ranges.values()) {
    const first = parsed.getLineAndCharacterOfPosition(range.pos).line;
    source
      .slice(range.pos, range.end)
      .split('\n')
      .forEach((text, i) => (comments[first + i] += ` ${text}`));
  }
  return comments;
}

/** Inline links and link definitions, outside code; external and mail links are left alone. */
function linkTargets(line: MarkdownLine): string[] {
  if (line.code) return [];
  const text = line.text.replace(/`[^`]*`/g, '``');
  const targets = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1]!,
  );
  const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(text)?.[1];
  if (definition) targets.push(definition);
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** The repository checked: its root, files, folders, npm scripts and Markdown headings. */
interface Repository {
  root: string;
  /** Each file read once per run. */
  anchors(target: string): Set<string>;
  /** Every file and folder, relative to the root (dependencies and build output left out). */
  files: Set<string>;
  folders: Set<string>;
  /** The folders at the root: a path starting with one of them is a repository path. */
  topFolders: Set<string>;
  /** package.json's scripts; null without a package.json. */
  scripts: Set<string> | null;
}

function repositoryAt(root: string): Repository {
  const anchorsOf = new Map<string, Set<string>>();
  const files = new Set(repositoryFiles(root));
  const folders = new Set<string>();
  for (const file of files) {
    for (let dir = path.posix.dirname(file); dir !== '.'; dir = path.posix.dirname(dir)) {
      folders.add(dir);
    }
  }
  const manifest = path.join(root, 'package.json');
  const scripts = statSync(manifest, { throwIfNoEntry: false })
    ? new Set(Object.keys((JSON.parse(readFileSync(manifest, 'utf8')).scripts ?? {}) as object))
    : null;
  return {
    root,
    anchors: (target) => {
      let anchors = anchorsOf.get(target);
      if (anchors === undefined) {
        anchors = headingAnchors(readFileSync(path.join(root, target), 'utf8'));
        anchorsOf.set(target, anchors);
      }
      return anchors;
    },
    files,
    folders,
    topFolders: new Set([...folders].filter((dir) => !dir.includes('/'))),
    scripts,
  };
}

/** A file name a reader would look for in the repository: code, docs, configuration. */
const REPOSITORY_FILE = /\.(?:[cm]?[jt]s|json|md|ya?ml|tpl|sh|html|css)$/;

/**
 * Whether `named` (a path as a doc or comment names it) is wrong about the repository: a path
 * from a root folder (`services/shared/contract.ts`, `bench/`) must exist; a shorter one with a
 * file name (`plugins/compression.ts`, within its service) must end some file's path. Others
 * (`./data`, `DATA_DIR/keys.db`, an image name, a URL, a glob or placeholder) are not checked.
 */
function missingPath(repo: Repository, named: string): string | null {
  const candidate = named
    .replace(/[#:].*$/, '')
    .replace(/[.,;)]+$/, '')
    .replace(/\/$/, '');
  if (!candidate.includes('/') || /^(?:\.\.?\/|[/~-])|[*?<>…{}$=@"'|[\]%\\]/.test(candidate)) {
    return null;
  }
  const first = candidate.split('/')[0]!;
  if (repo.topFolders.has(first)) {
    return repo.files.has(candidate) || repo.folders.has(candidate) ? null : candidate;
  }
  if (!REPOSITORY_FILE.test(candidate) || /^[A-Z][A-Z0-9_]*$/.test(first)) return null;
  for (const file of repo.files) if (file.endsWith(`/${candidate}`)) return null;
  return candidate;
}

/** Paths from a root folder in running text: `services/shared/redis.ts`, `bench/run.ts`. */
function rootedPaths(repo: Repository, text: string): string[] {
  if (repo.topFolders.size === 0) return [];
  const folders = [...repo.topFolders].map((f) => f.replace(/[.]/g, '\\.')).join('|');
  return [...text.matchAll(new RegExp(`(?<![\\w./@:-])(?:${folders})/[\\w./-]*`, 'g'))].map(
    (m) => m[0],
  );
}

/**
 * Paths a doc names, in backticks or in its text, and the npm scripts it runs (`npm run
 * chart:readme`), code blocks included: each must be in the repository.
 */
function pathFindings(repo: Repository, file: string, lines: MarkdownLine[]): Finding[] {
  const findings: Finding[] = [];
  for (const line of lines) {
    const at = { file, line: line.number };
    if (repo.scripts) {
      for (const [, script] of line.text.matchAll(
        /\bnpm run(?:-script)?(?: --?[\w-]+)* (\w[\w:.-]*)/g,
      )) {
        if (!repo.scripts.has(script!)) {
          findings.push({ ...at, message: `npm run ${script}: package.json has no such script` });
        }
      }
    }
    if (line.code) continue;
    const quoted = [...line.text.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!);
    const text = line.text.replace(/`[^`]*`/g, '``').replace(/\]\([^)]*\)/g, ']()');
    for (const named of [...quoted, ...rootedPaths(repo, text)]) {
      const missing = missingPath(repo, named);
      if (missing) {
        findings.push({ ...at, message: `path ${named}: ${missing} is not in the repository` });
      }
    }
  }
  return findings;
}

function linkFindings(repo: Repository, file: string, lines: MarkdownLine[]): Finding[] {
  const findings: Finding[] = [];
  for (const line of lines) {
    for (const link of linkTargets(line)) {
      const [pathPart = '', anchor] = link.split('#');
      const target = pathPart
        ? path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(pathPart)))
        : file;
      const at = { file, line: line.number };
      if (target.startsWith('../') || path.posix.isAbsolute(target)) {
        findings.push({ ...at, message: `link ${link} leaves the repository` });
        continue;
      }
      const stats = statSync(path.join(repo.root, target), { throwIfNoEntry: false });
      if (!stats) {
        findings.push({ ...at, message: `link ${link}: ${target} does not exist` });
        continue;
      }
      const isFile = stats.isFile();
      if (anchor && (!isFile || !target.endsWith('.md') || !repo.anchors(target).has(anchor))) {
        findings.push({ ...at, message: `link ${link}: ${target} has no heading #${anchor}` });
      }
    }
  }
  return findings;
}

/** `docs/….md#heading` named in a source file or the chart: the file and heading must exist. */
function referenceFindings(
  repo: Repository,
  file: string,
  lines: MarkdownLine[],
  comments: string[],
): Finding[] {
  const findings: Finding[] = [];
  for (const line of lines) {
    for (const [reference, target = '', anchor] of line.text.matchAll(
      /\b(docs\/[\w./-]+\.md)(?:#([\w-]+))?/g,
    )) {
      const at = { file, line: line.number };
      if (!statSync(path.join(repo.root, target), { throwIfNoEntry: false })?.isFile()) {
        findings.push({ ...at, message: `reference ${reference}: ${target} does not exist` });
      } else if (anchor && !repo.anchors(target).has(anchor)) {
        findings.push({
          ...at,
          message: `reference ${reference}: ${target} has no heading #${anchor}`,
        });
      }
    }
    // In comments only: code holds module names (`k6/http`) and a test's made-up paths.
    for (const named of rootedPaths(repo, comments[line.number - 1] ?? '')) {
      const missing = named.startsWith('docs/') ? null : missingPath(repo, named);
      if (missing) {
        findings.push({
          file,
          line: line.number,
          message: `path ${named}: ${missing} is not in the repository`,
        });
      }
    }
  }
  return findings;
}

/** The files of `targets` under `root`, each with the checks it gets. */
export function targetFiles(
  root: string,
  targets: DocTarget[] = TARGETS,
): Map<string, CheckName[]> {
  const files = walk(root);
  const selected = new Map<string, CheckName[]>();
  for (const target of targets) {
    const patterns = target.globs.map(globToRegExp);
    for (const file of files) {
      if (!EXEMPT.some((e) => file.startsWith(e)) && patterns.some((p) => p.test(file))) {
        selected.set(file, [...new Set([...(selected.get(file) ?? []), ...target.checks])]);
      }
    }
  }
  return selected;
}

export function checkDocs(root: string, targets: DocTarget[] = TARGETS): Finding[] {
  const findings: Finding[] = [];
  const repo = repositoryAt(root);
  for (const [file, checks] of targetFiles(root, targets)) {
    const lines = file.endsWith('.md')
      ? markdownLines(readFileSync(path.join(root, file), 'utf8'))
      : readFileSync(path.join(root, file), 'utf8')
          .split('\n')
          .map((text, i) => ({ number: i + 1, text, code: false }));
    const comments = file.endsWith('.md') ? [] : commentsOf(file, lines);
    findings.push(...textFindings(file, lines, comments, checks));
    if (checks.includes('links') && file.endsWith('.md')) {
      findings.push(...linkFindings(repo, file, lines));
    }
    if (checks.includes('references')) {
      findings.push(...referenceFindings(repo, file, lines, comments));
    }
    if (checks.includes('paths') && file.endsWith('.md')) {
      findings.push(...pathFindings(repo, file, lines));
    }
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..');
  const findings = checkDocs(root);
  for (const f of findings) console.error(`${f.file}:${f.line}: ${f.message}`);
  const checked = targetFiles(root).size;
  if (findings.length > 0) {
    console.error(`check:docs: ${findings.length} problem(s) in ${checked} files`);
    process.exit(1);
  }
  console.log(`check:docs: ${checked} files, no problem`);
}
