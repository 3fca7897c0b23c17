import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The dependency audit gate (scripts/images/audit-gate.ts) judging saved `npm audit --omit=dev
 * --json` reports, in npm's format: a planted vulnerable version (lodash 4.17.20, a high
 * advisory) fails it unless the allowlist accepts it with a reason until a date to come; no
 * report at all gives no verdict (exit 3), never a pass.
 */
const GATE = path.join(__dirname, '../../scripts/images/audit-gate.ts');
const TSX = path.join(__dirname, '../../node_modules/.bin/tsx');

const ADVISORY = {
  source: 1106913,
  name: 'lodash',
  dependency: 'lodash',
  title: 'Command Injection in lodash',
  url: 'https://github.com/advisories/GHSA-35jh-r3h4-6jhm',
  severity: 'high',
  cwe: ['CWE-77', 'CWE-94'],
  cvss: { score: 7.2, vectorString: 'CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H' },
  range: '<4.17.21',
};

function report(vulnerable: boolean) {
  const counts = { info: 0, low: 0, moderate: 0, high: vulnerable ? 1 : 0, critical: 0 };
  return {
    auditReportVersion: 2,
    vulnerabilities: vulnerable
      ? {
          lodash: {
            name: 'lodash',
            severity: 'high',
            isDirect: true,
            via: [ADVISORY],
            effects: [],
            range: '<=4.17.20',
            nodes: ['node_modules/lodash'],
            fixAvailable: { name: 'lodash', version: '4.17.21', isSemVerMajor: false },
          },
        }
      : {},
    metadata: {
      vulnerabilities: { ...counts, total: counts.high },
      dependencies: { prod: 2, dev: 0, optional: 0, peer: 0, peerOptional: 0, total: 1 },
    },
  };
}

const dir = mkdtempSync(path.join(tmpdir(), 'audit-gate-'));
function file(name: string, content: unknown): string {
  const at = path.join(dir, name);
  writeFileSync(at, JSON.stringify(content));
  return at;
}

function gate(reportFile: string, advisories: unknown[] = []) {
  const allowlist = file(`allow-${Math.random()}.json`, { advisories });
  const run = spawnSync(TSX, [GATE, '--report', reportFile, '--allowlist', allowlist], {
    encoding: 'utf8',
  });
  return { status: run.status, output: run.stdout + run.stderr };
}

const vulnerable = file('vulnerable.json', report(true));
const entry = { id: 'GHSA-35jh-r3h4-6jhm', package: 'lodash', reason: 'no input reaches template' };

describe('the dependency audit gate', () => {
  test('a high advisory fails it, named', () => {
    const { status, output } = gate(vulnerable);
    expect(status).toBe(1);
    expect(output).toMatch(/high lodash .*GHSA-35jh-r3h4-6jhm.*BLOCKING/);
  });

  test('the allowlist accepts it with a reason until a date to come', () => {
    const { status, output } = gate(vulnerable, [{ ...entry, expires: '2099-12-31' }]);
    expect(status).toBe(0);
    expect(output).toContain('allowed until 2099-12-31: no input reaches template');
  });

  test('an expired entry, or one without a reason, fails it', () => {
    expect(gate(vulnerable, [{ ...entry, expires: '2020-01-01' }]).status).toBe(1);
    expect(gate(vulnerable, [{ ...entry, reason: '', expires: '2099-12-31' }]).status).toBe(1);
  });

  test('a clean report passes, and an entry matching nothing is pointed out', () => {
    const { status, output } = gate(file('clean.json', report(false)), [
      { ...entry, expires: '2099-12-31' },
    ]);
    expect(status).toBe(0);
    expect(output).toContain('matches no advisory any more');
  });

  test('no report (the audit endpoint refusing) is no verdict, never a pass', () => {
    const refused = file('refused.json', {
      message:
        '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
      method: 'POST',
    });
    const { status, output } = gate(refused);
    expect(status).toBe(3);
    expect(output).toContain('NO VERDICT');
  });
});
