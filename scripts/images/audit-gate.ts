/**
 * The dependency audit gate (CI, .ci/run): `npm audit --omit=dev` must report no high or
 * critical advisory against the production dependencies, the ones the images ship, unless
 * audit-allowlist.json accepts that advisory for a time, with a reason:
 *
 *   { "advisories": [ { "id": "GHSA-xxxx-xxxx-xxxx", "package": "name",
 *                       "reason": "why it does not apply, or what is waited for",
 *                       "expires": "YYYY-MM-DD" } ] }
 *
 * An entry without a reason or a valid expiry date, or past its expiry, fails the gate; one that
 * matches no current advisory is reported, to be removed. Without a report (the registry's audit
 * endpoint unreachable, or refusing as some registry mirrors and proxies do) there is no verdict:
 * the gate never passes then, it exits NO_REPORT (3), saying so; .ci/run reports that loudly and
 * fails on it only with AUDIT_REQUIRED=1.
 *
 *   npm run audit:gate                               # audits this project
 *   npm run audit:gate -- --prefix <dir>             # audits the project in <dir>
 *   npm run audit:gate -- --report <audit.json>      # judges a saved `npm audit --omit=dev --json`
 *   npm run audit:gate -- --allowlist <file>         # another allowlist (default: the repository's)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const BLOCKING = new Set(['high', 'critical']);
/** The exit code of a run that got no audit report, so gave no verdict. */
const NO_REPORT = 3;

interface Advisory {
  source?: number;
  name: string;
  title?: string;
  url?: string;
  severity: string;
  range?: string;
}

interface AuditReport {
  auditReportVersion?: number;
  vulnerabilities?: Record<string, { severity: string; via: (string | Advisory)[] }>;
  metadata?: { vulnerabilities?: Record<string, number>; dependencies?: Record<string, number> };
  error?: { code?: string; summary?: string; detail?: string };
  message?: string;
  statusCode?: number;
}

export interface AllowEntry {
  id: string;
  package?: string;
  reason: string;
  expires: string;
}

export interface Finding {
  id: string;
  package: string;
  severity: string;
  title: string;
  url: string;
  range: string;
}

/** The advisory's GitHub id (from its URL), else npm's number. */
const idOf = (a: Advisory) =>
  /GHSA(-[23456789cfghjmpqrvwx]{4}){3}/.exec(a.url ?? '')?.[0] ?? String(a.source ?? a.title);

/**
 * The high and critical advisories of an `npm audit --json` report, each once, or the reason
 * the text is not a report (the audit endpoint unreachable or refusing).
 */
export function findings(text: string): Finding[] | { unusable: string } {
  let report: AuditReport;
  try {
    report = JSON.parse(text) as AuditReport;
  } catch {
    return { unusable: `npm audit printed no JSON report: ${text.trim().slice(0, 300)}` };
  }
  if (!report.vulnerabilities || !report.metadata) {
    const why = [report.message, report.error?.code, report.error?.summary, report.error?.detail]
      .filter(Boolean)
      .join(': ');
    return { unusable: `npm audit returned no report (${why || 'no vulnerabilities section'})` };
  }
  const found = new Map<string, Finding>();
  for (const vulnerability of Object.values(report.vulnerabilities)) {
    for (const via of vulnerability.via) {
      if (typeof via === 'string' || !BLOCKING.has(via.severity)) continue;
      const id = idOf(via);
      found.set(`${id} ${via.name}`, {
        id,
        package: via.name,
        severity: via.severity,
        title: via.title ?? '',
        url: via.url ?? '',
        range: via.range ?? '',
      });
    }
  }
  return [...found.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/** What is wrong with an allowlist entry: no id, no reason, no valid expiry date, expired. */
export function entryProblems(entry: AllowEntry, today: string): string[] {
  const name = entry.id || JSON.stringify(entry);
  const problems: string[] = [];
  if (!entry.id) problems.push(`allowlist entry ${name} has no id`);
  if (!entry.reason?.trim()) problems.push(`allowlist entry ${name} gives no reason`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(entry.expires ?? '') || isNaN(Date.parse(entry.expires))) {
    problems.push(`allowlist entry ${name} has no expiry date (YYYY-MM-DD)`);
  } else if (entry.expires < today) {
    problems.push(`allowlist entry ${name} expired on ${entry.expires}: fix it or renew it`);
  }
  return problems;
}

const matching = (finding: Finding, entries: AllowEntry[]) =>
  entries.find((e) => e.id === finding.id && (!e.package || e.package === finding.package));

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
}

function main(args: string[]): number {
  const repo = path.resolve(__dirname, '..', '..');
  const allowlistFile = option(args, '--allowlist') ?? path.join(repo, 'audit-allowlist.json');
  const reportFile = option(args, '--report');
  const prefix = path.resolve(option(args, '--prefix') ?? repo);

  let text: string;
  let source: string;
  if (reportFile) {
    text = readFileSync(reportFile, 'utf8');
    source = reportFile;
  } else {
    const audit = spawnSync('npm', ['audit', '--omit=dev', '--json'], {
      cwd: prefix,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (audit.error) {
      console.error(`audit: NO VERDICT: npm audit could not run: ${audit.error.message}`);
      return NO_REPORT;
    }
    text = audit.stdout;
    source = `npm audit --omit=dev in ${prefix}`;
  }
  const result = findings(text);
  if (!Array.isArray(result)) {
    console.error(
      `audit: NO VERDICT: no audit report: the registry's audit endpoint could not be used. ${result.unusable}`,
    );
    return NO_REPORT;
  }

  const entries = (JSON.parse(readFileSync(allowlistFile, 'utf8')) as { advisories?: AllowEntry[] })
    .advisories;
  if (!Array.isArray(entries)) {
    console.error(`audit: FAIL: ${allowlistFile} has no "advisories" list`);
    return 1;
  }
  const today = new Date().toISOString().slice(0, 10);
  const problems = entries.flatMap((entry) => entryProblems(entry, today));
  let blocking = 0;
  for (const finding of result) {
    const entry = matching(finding, entries);
    const valid = entry && entryProblems(entry, today).length === 0;
    const verdict = valid
      ? `allowed until ${entry.expires}: ${entry.reason}`
      : `BLOCKING${entry ? ' (its allowlist entry is not valid, below)' : ''}`;
    if (!valid) blocking++;
    console.log(
      `audit: ${finding.severity} ${finding.package} ${finding.range} ${finding.id} ${finding.title} (${finding.url}): ${verdict}`,
    );
  }
  for (const entry of entries) {
    if (!result.some((f) => f.id === entry.id)) {
      console.log(`audit: allowlist entry ${entry.id} matches no advisory any more: remove it`);
    }
  }
  for (const problem of problems) console.log(`audit: FAIL: ${problem}`);
  if (blocking > 0) {
    console.log(
      `audit: FAIL: ${blocking} high or critical advisor${blocking === 1 ? 'y' : 'ies'} against the production dependencies (${source})`,
    );
  }
  if (blocking > 0 || problems.length > 0) return 1;
  console.log(
    `audit: passed: no high or critical advisory outside the allowlist (${source}; ${result.length} allowed by it)`,
  );
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
