import path from 'node:path';
import {
  checkDocs,
  type DocTarget,
  globToRegExp,
  headingAnchor,
  headingAnchors,
} from '../../scripts/check-docs';

/** The docs check (npm run check:docs, .ci/run) on fixtures, then on this repository. */

const fixtures = path.join(__dirname, 'fixtures');
const TARGETS: DocTarget[] = [
  { globs: ['README.md', 'docs/**/*.md'], checks: ['links', 'outside', 'history', 'paths'] },
  { globs: ['CHANGELOG.md'], checks: ['links', 'outside'] },
  { globs: ['src/**/*.{ts,js}'], checks: ['references', 'outside', 'comments'] },
];

const report = (root: string) =>
  checkDocs(path.join(fixtures, root), TARGETS).map((f) => `${f.file}:${f.line}: ${f.message}`);

test('a reference doc with valid links and paths, and dates and numbers only in code, passes', () => {
  expect(report('good')).toEqual([]);
});

test('a doc citing the spec, linking what is not there, and narrating runs fails, line by line', () => {
  const findings = report('bad');
  const at = (file: string, line: number) =>
    findings.filter((f) => f.startsWith(`${file}:${line}:`));
  // References outside the repository.
  expect(at('README.md', 3)).toEqual([
    expect.stringContaining('outside the repository (../shared)'),
    expect.stringContaining('the spec file'),
    expect.stringContaining('a spec section'),
  ]);
  // Links: a missing heading, a missing file, a path out of the repository.
  expect(at('README.md', 5)).toEqual([
    expect.stringContaining('docs/api.md has no heading #quotas'),
    expect.stringContaining('docs/missing.md does not exist'),
  ]);
  expect(at('README.md', 6)).toEqual([expect.stringContaining('leaves the repository')]);
  // Work-log wording: a session, a dated heading, lettered runs, issue numbers.
  expect(at('docs/api.md', 3)).toEqual([
    expect.stringContaining('"session"'),
    expect.stringContaining('a date'),
  ]);
  expect(at('docs/api.md', 5)).toEqual([
    expect.stringContaining('an issue number'),
    expect.stringContaining('an issue reference'),
    expect.stringContaining('an issue or pull-request number'),
    expect.stringContaining('a dated or lettered run'),
  ]);
  // The changelog keeps its dated release headings, not spec references or broken links.
  expect(at('CHANGELOG.md', 3)).toEqual([]);
  expect(at('CHANGELOG.md', 5)).toEqual([
    expect.stringContaining('a spec section'),
    expect.stringContaining('has no heading #gone'),
  ]);
  // Source comments: a spec section and references to a missing heading and file; the import of
  // a module under a `shared` folder is code, not a reference.
  expect(at('src/quota.ts', 1)).toEqual([]);
  expect(at('src/quota.ts', 2)).toEqual([
    expect.stringContaining('a spec section'),
    expect.stringContaining('docs/api.md has no heading #quotas'),
    expect.stringContaining('docs/missing.md does not exist'),
  ]);
  // Spec identifiers alone: the spec is not in the repository, the doc states the rule.
  for (const line of [7, 8, 9, 10]) {
    expect(at('docs/api.md', line)).toEqual([expect.stringContaining('a spec identifier')]);
  }
  // A run log: numbered runs, "this run", "the last run", "our run", "today's run", a month.
  expect(at('docs/api.md', 12)).toEqual([expect.stringContaining('a dated or lettered run')]);
  expect(at('docs/api.md', 13)).toEqual([expect.stringContaining('run-log wording')]);
  expect(at('docs/api.md', 14)).toEqual([expect.stringContaining('run-log wording')]);
  expect(at('docs/api.md', 15)).toEqual([expect.stringContaining('a date')]);
  // Repository paths in backticks and in prose, and npm scripts, must exist.
  expect(at('docs/api.md', 17)).toEqual([
    expect.stringContaining('path src/routes.ts'),
    expect.stringContaining('path plugins/quota.ts'),
    expect.stringContaining('path src/gone/table.ts'),
  ]);
  expect(at('docs/api.md', 18)).toEqual([
    expect.stringContaining('npm run nothing: package.json has no such script'),
  ]);
  // Comments are read for spec identifiers, run-log wording and paths; code strings are not.
  expect(at('src/quota.ts', 4)).toEqual([expect.stringContaining('a spec identifier')]);
  expect(at('src/quota.ts', 5)).toEqual([
    expect.stringContaining('a dated or lettered run'),
    expect.stringContaining('run-log wording'),
    expect.stringContaining('a date'),
  ]);
  expect(at('src/quota.ts', 6)).toEqual([]);
  expect(at('src/quota.ts', 7)).toEqual([expect.stringContaining('path src/gone.ts')]);
  expect(findings).toHaveLength(34);
});

test("anchors are GitHub's: code and emphasis unwrapped, punctuation dropped, repeats numbered", () => {
  expect(headingAnchor('Quotas and rate-limit headers')).toBe('quotas-and-rate-limit-headers');
  expect(headingAnchor('The `Tool` record')).toBe('the-tool-record');
  expect(headingAnchor('1. MongoDB')).toBe('1-mongodb');
  expect(headingAnchor('`MONGODB_URI` and _more_')).toBe('mongodb_uri-and-more');
  expect(headingAnchor('GitOps (Argo CD, Flux)')).toBe('gitops-argo-cd-flux');
  expect([...headingAnchors('# A\n## A\n```\n# not a heading\n```\n## A')]).toEqual([
    'a',
    'a-1',
    'a-2',
  ]);
});

test('globs: ** spans folders, * stays in one, {a,b} is either', () => {
  expect(globToRegExp('src/**/*.{ts,js}').test('src/a/b.js')).toBe(true);
  expect(globToRegExp('src/**/*.{ts,js}').test('src/a/b.json')).toBe(false);
  expect(globToRegExp('docs/**/*.md').test('docs/api.md')).toBe(true);
  expect(globToRegExp('docs/**/*.md').test('docs/runbooks/x.md')).toBe(true);
  expect(globToRegExp('docs/*.md').test('docs/runbooks/x.md')).toBe(false);
  expect(globToRegExp('README.md').test('helm/README.md')).toBe(false);
});

test("this repository's docs pass the check", () => {
  const findings = checkDocs(path.resolve(__dirname, '../..'));
  expect(findings.map((f) => `${f.file}:${f.line}: ${f.message}`)).toEqual([]);
});
