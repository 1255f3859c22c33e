/** docs/alerts.md, parsed for the apps' tests: each app checks the rules labelled with its component. */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export interface AlertRule {
  alert: string;
  expr: string;
  labels?: { severity?: string; component?: string };
}

/** The alerting rules of docs/alerts.md (its yaml block). */
export function alertRules(): AlertRule[] {
  const doc = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/alerts.md'), 'utf8');
  const yamlBlock = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
  return (parse(yamlBlock) as { groups: { rules: AlertRule[] }[] }).groups.flatMap((g) => g.rules);
}

/** The Timbra metrics an expression names, with the labels it matches on. */
export function metricsIn(expr: string): { name: string; labels: string[] }[] {
  return [...expr.matchAll(/\b(timbra_\w+)(?:\{([^}]*)\})?/g)].map((m) => ({
    name: m[1]!,
    labels: [...(m[2] ?? '').matchAll(/(\w+)\s*(?:=~|!=|!~|=)/g)].map((l) => l[1]!),
  }));
}

/** Every series a prom-client registry exports, with its label names (histograms with their series). */
export function exportedSeries(registry: { getMetricsAsArray(): unknown[] }): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  for (const metric of registry.getMetricsAsArray()) {
    const m = metric as { name: string; type: string; labelNames: string[] };
    const labels = new Set(m.labelNames);
    const series = m.type === 'histogram' ? ['_bucket', '_count', '_sum'].map((s) => m.name + s) : [m.name];
    for (const s of series) names.set(s, s.endsWith('_bucket') ? new Set([...labels, 'le']) : labels);
  }
  return names;
}

/**
 * What is wrong with the rules of `component` against the series it exports: a metric it does not
 * export, a label the metric does not have, a rule without a known component. Empty when right.
 */
export function alertDrift(component: 'api' | 'worker', exported: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const rule of alertRules()) {
    if (rule.labels?.component !== 'api' && rule.labels?.component !== 'worker')
      problems.push(`${rule.alert}: labels.component must be api or worker`);
    if (rule.labels?.component !== component) continue;
    for (const m of metricsIn(String(rule.expr))) {
      const labels = exported.get(m.name);
      if (!labels) problems.push(`${rule.alert}: ${m.name} is not exported by the ${component}`);
      else for (const l of m.labels) if (!labels.has(l)) problems.push(`${rule.alert}: ${m.name} has no label ${l}`);
    }
  }
  return problems;
}
