/**
 * The docs check: `npm run check:docs` (and `.ci/run`). The documentation is a reference for
 * the product as it is, readable from this repository alone. It fails, naming file and line, on
 *
 *   - a relative link to a file that does not exist, or to a heading the file does not have
 *     (GitHub's anchors), or leaving the repository;
 *   - a reference to a file outside the repository (the shared folder beside it, the spec file
 *     or one of its section numbers): the decisions clients rely on are stated in docs/api.md;
 *   - the wording of a work log: sessions, issue numbers, dated runs (history belongs in
 *     CHANGELOG.md and git).
 *
 *   - in source files and the chart, a reference to a doc (`docs/api.md#search`) whose file or
 *     heading does not exist, and the same outside references.
 *
 * What is checked is the list TARGETS: globs and the checks each gets. The text checks read any
 * file, the link check only Markdown.
 *
 *   npm run check:docs
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';

export type CheckName = 'links' | 'references' | 'outside' | 'history' | 'issues';

export interface DocTarget {
  globs: string[];
  checks: CheckName[];
}

export const TARGETS: DocTarget[] = [
  {
    globs: ['README.md', 'docs/**/*.md', 'helm/tool-directory/README.md', 'k6/**/*.md'],
    checks: ['links', 'outside', 'history'],
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
    checks: ['references', 'outside', 'issues'],
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
];

/** Issue references, checked in source comments too ("session" is a word of code there). */
const ISSUE_WORDING: Array<[RegExp, string]> = [
  [/\bissues?\s*#?\d+/i, 'an issue number: say what is, history goes to CHANGELOG.md'],
  [/\([\w -]*\bissue\b[^)]*\)/i, 'an issue reference: say what is, history goes to CHANGELOG.md'],
];

const HISTORY_WORDING: Array<[RegExp, string]> = [
  [/\bsessions?\b/i, 'work-log wording ("session"): say what is, history goes to CHANGELOG.md'],
  ...ISSUE_WORDING,
  [
    /(^|[\s(])#\d+(?![-\w])/,
    'an issue or pull-request number: say what is, history goes to CHANGELOG.md',
  ],
  [
    /\b(?:this|that|the last|earlier) runs?\b|\bruns? [A-Z](?![\w'])/,
    'a dated or lettered run: give the method and the current figures',
  ],
  [
    /\b20\d\d-\d\d-\d\d\b(?!T)/,
    'a date (a dated run or change): give the current state; history goes to CHANGELOG.md',
  ],
];

function textFindings(file: string, lines: MarkdownLine[], checks: CheckName[]): Finding[] {
  const findings: Finding[] = [];
  for (const line of lines) {
    // A module path is code, not a reference: services/shared is this repository's.
    const text = line.text.replace(
      /(?:\bfrom\s+|^import\s+|\b(?:require|import)\()(['"])[^'"]*\1/g,
      '',
    );
    const rules = [
      ...(checks.includes('outside') ? OUTSIDE_REFERENCES.map((r) => [r, text] as const) : []),
      ...(checks.includes('history') ? HISTORY_WORDING.map((r) => [r, prose(line)] as const) : []),
      ...(checks.includes('issues') ? ISSUE_WORDING.map((r) => [r, text] as const) : []),
    ];
    for (const [[pattern, message], text] of rules) {
      if (pattern.test(text)) findings.push({ file, line: line.number, message });
    }
  }
  return findings;
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

/** The repository checked: its root, and the heading anchors of its Markdown files. */
interface Repository {
  root: string;
  /** Each file read once per run. */
  anchors(target: string): Set<string>;
}

function repositoryAt(root: string): Repository {
  const anchorsOf = new Map<string, Set<string>>();
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
  };
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
function referenceFindings(repo: Repository, file: string, lines: MarkdownLine[]): Finding[] {
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
    findings.push(...textFindings(file, lines, checks));
    if (checks.includes('links') && file.endsWith('.md')) {
      findings.push(...linkFindings(repo, file, lines));
    }
    if (checks.includes('references')) {
      findings.push(...referenceFindings(repo, file, lines));
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
