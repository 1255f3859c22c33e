/**
 * Test and live (platform mode), as Stripe has them: `POST /v1/organizations/:id/test` makes — once —
 * the organization's test twin, an organization of its own with the same facts, and answers it.
 * Every other route takes the twin's id as any organization's: its keys are `tk_test_…`, its own
 * provider accounts (a Stripe account's test-mode secrets), a CSD of its own if it wants one (else it
 * seals with the live one's). Its rows are apart from the live one's by row-level security, its
 * folios its own, and the worker stamps its documents at the test PAC only (PAC_TEST_*).
 */
import type { Request, Response, Router } from 'express';
import type { PrismaClient } from '@timbra/db';
import {
  effectiveSettings,
  ensureTestTwin,
  organizationSettings,
  type EffectiveSettings,
  type Organization,
} from '@timbra/db/organizations';
import { ApiError } from '../http/errors.ts';
import { seriesOf } from './organization-settings.ts';

export function testModeRoutes(
  router: Router,
  deps: {
    owner: PrismaClient;
    defaults: EffectiveSettings;
    found: (id: string) => Promise<Organization>;
    described: (o: Organization) => Promise<object>;
  },
): void {
  router.post('/:id/test', async (req: Request, res: Response) => {
    const live = await deps.found(String(req.params.id));
    if (live.mode === 'test')
      throw new ApiError('organization_is_test', undefined, [
        { path: 'id', message: `its live organization is ${live.liveId}` },
      ]);
    // Its series are the live one's as they are now, with folios of their own from 1.
    const settings = effectiveSettings(await organizationSettings(deps.owner, live.id), deps.defaults);
    const made = await ensureTestTwin(deps.owner, live.id, seriesOf(settings));
    if (!made) throw new ApiError('not_found');
    res.status(made.created ? 201 : 200).json(await deps.described(made.organization));
  });
}
