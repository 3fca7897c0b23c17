import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chartDir } from '../helm/helm';

export interface DashboardQuery {
  panel: string;
  expr: string;
}

export interface DashboardVariable {
  name: string;
  /** `label_values(<metric>, <label>)`: the values of `label` on the series of `metric`. */
  metric: string;
  label: string;
}

interface Panel {
  title?: string;
  panels?: Panel[];
  targets?: { expr?: string }[];
}

interface Dashboard {
  panels: Panel[];
  templating?: { list: { name: string; type: string; query?: string }[] };
}

const DASHBOARD = path.join(chartDir, 'files/dashboards/tool-directory.json');

const dashboard = () => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

/** The dashboard's query variables; one of another form fails. */
export function dashboardVariables(): DashboardVariable[] {
  return (dashboard().templating?.list ?? [])
    .filter((v) => v.type === 'query')
    .map((v) => {
      const [, metric, label] = /^label_values\((\w+),\s*(\w+)\)$/.exec(v.query ?? '') ?? [];
      if (!metric || !label)
        throw new Error(`dashboard variable ${v.name}: ${v.query} not understood`);
      return { name: v.name, metric, label };
    });
}

/** Every query of the chart's Grafana dashboard, with the title of its panel. */
export function dashboardQueries(): DashboardQuery[] {
  const queries: DashboardQuery[] = [];
  const visit = (panels: Panel[]) => {
    for (const panel of panels) {
      visit(panel.panels ?? []);
      for (const target of panel.targets ?? []) {
        if (target.expr) queries.push({ panel: panel.title ?? '', expr: target.expr });
      }
    }
  };
  visit(dashboard().panels);
  return queries;
}

/**
 * A query as Grafana sends it: a multi-value variable set to "All" becomes a regex of all its
 * values, `(a|b)`, and `$__rate_interval` is max(step + scrape interval, 4 × scrape interval).
 * An unknown variable left in the query fails.
 */
export function substitute(
  expr: string,
  {
    variables,
    stepS,
    scrapeIntervalS,
  }: { variables: Record<string, string[]>; stepS: number; scrapeIntervalS: number },
): string {
  const rateInterval = Math.max(stepS + scrapeIntervalS, 4 * scrapeIntervalS);
  const result = expr
    .replaceAll('$__rate_interval', `${rateInterval}s`)
    .replace(/\$(\w+)/g, (whole, name: string) => {
      const values = variables[name];
      if (!values) throw new Error(`dashboard variable ${whole} has no values`);
      return `(${values.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;
    });
  return result;
}
