import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import type { PrismaClient } from '@timbra/db';
import { createWorkerMetrics } from '@timbra/worker/metrics';
import { createMetrics } from '../src/http/metrics.ts';

const doc = readFileSync(new URL('../../../docs/alerts.md', import.meta.url), 'utf8');
const yamlBlock = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
const rules = (parse(yamlBlock) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap(
  (g) => g.rules,
);

/** Every metric the API and the worker export, with its label names (histograms with their series). */
function exported(): Map<string, Set<string>> {
  const worker = createWorkerMetrics({
    prisma: {} as PrismaClient,
    dlqSize: () => Promise.resolve(0),
    chain: { breakers: new Map() } as unknown as Parameters<typeof createWorkerMetrics>[0]['chain'],
  });
  const names = new Map<string, Set<string>>();
  for (const registry of [createMetrics().registry, worker.registry]) {
    for (const metric of registry.getMetricsAsArray()) {
      const m = metric as unknown as { name: string; type: string; labelNames: string[] };
      const labels = new Set(m.labelNames);
      const series = m.type === 'histogram' ? ['_bucket', '_count', '_sum'].map((s) => m.name + s) : [m.name];
      for (const s of series) names.set(s, s.endsWith('_bucket') ? new Set([...labels, 'le']) : labels);
    }
  }
  return names;
}

describe('docs/alerts.md', () => {
  it('has rules, each with a name and an expression', () => {
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const rule of rules) expect(rule).toMatchObject({ alert: expect.any(String), expr: expect.any(String) });
  });

  it('names only metrics (and labels) the API or the worker exports', () => {
    const metrics = exported();
    const used = rules.flatMap((r) =>
      [...String(r.expr).matchAll(/\b(timbra_\w+)(?:\{([^}]*)\})?/g)].map((m) => ({
        alert: r.alert,
        name: m[1]!,
        labels: [...(m[2] ?? '').matchAll(/(\w+)\s*(?:=~|!=|!~|=)/g)].map((l) => l[1]!),
      })),
    );
    expect(used.length).toBeGreaterThan(0);
    for (const u of used) {
      expect({ alert: u.alert, metric: u.name, known: metrics.has(u.name) }).toEqual({
        alert: u.alert,
        metric: u.name,
        known: true,
      });
      for (const label of u.labels)
        expect([u.name, label, metrics.get(u.name)!.has(label)]).toEqual([u.name, label, true]);
    }
  });
});
