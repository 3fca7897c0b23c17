import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { headingAnchors } from '../../scripts/check-docs';
import { chartDir, repoRoot } from './helm';

/**
 * Every alert's runbook_url (files/alerts.yml; the chart puts docsBaseUrl in front of it) names
 * a heading of a page in docs/, by GitHub's anchor of that heading: the link an on-call engineer
 * opens from Alertmanager or Grafana lands on the runbook.
 */

interface Rule {
  alert?: string;
  annotations?: Record<string, string>;
}

const rules = (parse(readFileSync(path.join(chartDir, 'files/alerts.yml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> })
  .groups.flatMap((g) => g.rules);
const alerts = rules.filter((r) => r.alert !== undefined);

/** Anchors of every docs/*.md page, by its path from the repository root. */
const docs = new Map(
  readdirSync(path.join(repoRoot, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => [`docs/${file}`, headingAnchors(readFileSync(path.join(repoRoot, 'docs', file), 'utf8'))]),
);

function resolves(runbookUrl: string): boolean {
  const [page = '', anchor] = runbookUrl.split('#');
  return anchor !== undefined && (docs.get(page)?.has(anchor) ?? false);
}

test('the alert file has alerts, each with a runbook_url', () => {
  expect(alerts.length).toBeGreaterThan(8);
  for (const alert of alerts) expect([alert.alert, alert.annotations?.runbook_url]).toEqual([alert.alert, expect.any(String)]);
});

test.each(alerts.map((a) => [a.alert, a.annotations?.runbook_url ?? ''] as const))(
  '%s: its runbook_url %s is a heading of docs/*.md',
  (_alert, runbookUrl) => {
    expect(runbookUrl).toMatch(/^docs\/[\w-]+\.md#[\w-]+$/);
    expect(resolves(runbookUrl)).toBe(true);
  },
);

test('a page or heading that does not exist does not resolve (the check is not vacuous)', () => {
  expect(resolves('docs/observability.md#tooldirectorygatewayhigh5xx')).toBe(true);
  expect(resolves('docs/observability.md#tooldirectorygatewayhigh4xx')).toBe(false);
  expect(resolves('docs/missing.md#tooldirectorygatewayhigh5xx')).toBe(false);
  expect(resolves('docs/observability.md')).toBe(false);
});
