import { describe, expect, it } from '@jest/globals';
import { alertDrift, alertRules, exportedSeries } from '@timbra/test-support';
import { createMetrics } from '../src/http/metrics.ts';

describe('docs/alerts.md, the API’s rules', () => {
  it('has rules, each with a name, an expression and a component (api or worker)', () => {
    expect(alertRules().length).toBeGreaterThanOrEqual(8);
    expect(alertRules().filter((r) => r.labels?.component === 'api').length).toBeGreaterThanOrEqual(2);
  });

  it('names only metrics (and labels) the API exports in the rules labelled component: api', () => {
    expect(alertDrift('api', exportedSeries(createMetrics().registry))).toEqual([]);
  });

  it('is a real check: a metric the API does not export is reported', () => {
    const withoutOne = exportedSeries(createMetrics().registry);
    withoutOne.delete('timbra_webhooks_total');
    expect(alertDrift('api', withoutOne)).toEqual([expect.stringContaining('timbra_webhooks_total')]);
  });
});
