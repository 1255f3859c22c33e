/**
 * Platform mode: an organization's own logo on its PDFs — `PUT /v1/organizations/:id/logo` with the
 * PNG or JPEG itself as the body (at most 1 MB, checked as INVOICE_LOGO_FILE is: cfdi-node's
 * invoiceLogoProblem), `DELETE` to go back to the deployment's. Its API and its emails use it from
 * their next build (its API at once on this process).
 */
import express, { type Request, type Response, type Router } from 'express';
import { invoiceLogoProblem, MAX_LOGO_BYTES } from '@timbra/cfdi-node';
import type { PrismaClient } from '@timbra/db';
import { saveOrganizationLogo } from '@timbra/db/organizations';
import { ApiError } from '../http/errors.ts';

export function logoRoutes(
  router: Router,
  deps: {
    owner: PrismaClient;
    found: (id: string) => Promise<{ id: string }>;
    changed: (organizationId: string) => Promise<void>;
    /** The organization as the platform key sees it, after the change. */
    described: (id: string) => Promise<object>;
  },
): void {
  const image = express.raw({ type: ['image/png', 'image/jpeg'], limit: MAX_LOGO_BYTES });
  router.put('/:id/logo', image, async (req: Request, res: Response) => {
    const organization = await deps.found(String(req.params.id));
    if (!Buffer.isBuffer(req.body))
      throw new ApiError('unsupported_media_type', 'Send the logo itself: Content-Type image/png or image/jpeg.');
    const problem = invoiceLogoProblem(req.body);
    if (problem)
      throw new ApiError('validation_failed', undefined, [{ path: 'body', message: `The logo ${problem}.` }]);
    await saveOrganizationLogo(deps.owner, organization.id, req.body);
    await deps.changed(organization.id);
    res.json(await deps.described(organization.id));
  });

  router.delete('/:id/logo', async (req: Request, res: Response) => {
    const organization = await deps.found(String(req.params.id));
    await saveOrganizationLogo(deps.owner, organization.id, null);
    await deps.changed(organization.id);
    res.json(await deps.described(organization.id));
  });
}
