import { describe, expect, it } from '@jest/globals';
import { alertDrift, alertRules, exportedSeries } from '@timbra/test-support';
import { loadTestCsd } from '@timbra/test-support';
import { createMetrics } from '../src/http/metrics.ts';

// The API as it runs: with the emisor's CSD (its expiry is a metric), and the e.firmas' expiry.
const metrics = () => createMetrics({ csd: loadTestCsd('EKU9003173C9'), efirmas: () => Promise.resolve([]) });

describe('docs/alerts.md, the API’s rules', () => {
  it('has rules, each with a name, an expression and a component (api or worker)', () => {
    expect(alertRules().length).toBeGreaterThanOrEqual(8);
    expect(alertRules().filter((r) => r.labels?.component === 'api').length).toBeGreaterThanOrEqual(2);
  });

  it('names only metrics (and labels) the API exports in the rules labelled component: api', () => {
    expect(alertDrift('api', exportedSeries(metrics().registry))).toEqual([]);
  });

  it('is a real check: a metric the API does not export is reported', () => {
    const withoutOne = exportedSeries(metrics().registry);
    withoutOne.delete('timbra_webhooks_total');
    expect(alertDrift('api', withoutOne)).toEqual([expect.stringContaining('timbra_webhooks_total')]);
  });

  it("exports the CSD's seconds left, from the certificate it was started with", async () => {
    const csd = loadTestCsd('EKU9003173C9');
    const text = await metrics().registry.getSingleMetricAsString('timbra_csd_expires_in_seconds');
    const value = Number(
      /timbra_csd_expires_in_seconds\{no_certificado="30001000000500003416"[^}]*\} (-?\d+)/.exec(text)?.[1],
    );
    expect(Math.abs(value - (csd.validTo.getTime() - Date.now()) / 1000)).toBeLessThan(60);
  });
});
