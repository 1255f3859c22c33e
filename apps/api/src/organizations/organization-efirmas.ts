/**
 * `POST /v1/organizations/:id/efirmas`: the organization's e.firma (FIEL), checked as `ops
 * efirma:upload` checks it (cfdi-core's checkEfirmaUpload), sealed by VAULT_KEYS and stored; the
 * worker's reconciliation with the SAT's record (docs/sat-record.md) signs its requests with it.
 */
import type { X509Certificate } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { CfdiError } from '@timbra/cfdi-core';
import { sealEfirma, type KeyVault } from '@timbra/cfdi-node';
import { EfirmaAlreadyStored, storeEfirma, type listEfirmas } from '@timbra/db/csds';
import type { Organization, OrganizationClients } from '@timbra/db/organizations';
import { ApiError } from '../http/errors.ts';
import { validation } from '../http/lists.ts';

/** A certificate and its key as the organizations API takes them (a CSD's or an e.firma's): base64 DER. */
export const CERTIFICATE_FILES = z.object({
  certificate: z.string().base64().min(1),
  privateKey: z.string().base64().min(1),
  password: z.string().min(1).max(256),
});

/** The files' bytes and password of a parsed CERTIFICATE_FILES body. */
export const filesOf = (body: z.infer<typeof CERTIFICATE_FILES>) => ({
  cer: Buffer.from(body.certificate, 'base64'),
  key: Buffer.from(body.privateKey, 'base64'),
  password: body.password,
});

const EFIRMA_UPLOAD = CERTIFICATE_FILES.strict();

/** The organization's e.firmas as its description lists them: no secret, which one is in use. */
export const efirmaViews = (efirmas: Awaited<ReturnType<typeof listEfirmas>>) =>
  efirmas.map((e) => ({
    noCertificado: e.noCertificado,
    validFrom: e.validFrom.toISOString(),
    validTo: e.validTo.toISOString(),
    inUse: e.current,
    chain: e.chain,
  }));

export function efirmaRoutes(
  router: Router,
  deps: {
    clients: OrganizationClients;
    vault: KeyVault | undefined;
    trustedCas?: readonly X509Certificate[] | undefined;
    found: (id: string) => Promise<Organization>;
    described: (o: Organization) => Promise<object>;
  },
): void {
  router.post('/:id/efirmas', async (req: Request, res: Response) => {
    const organization = await deps.found(String(req.params.id));
    const parsed = EFIRMA_UPLOAD.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    // The SAT's record is read for live organizations: a test twin's documents never reach it.
    if (organization.mode === 'test')
      throw new ApiError('organization_is_test', undefined, [
        { path: 'id', message: `its live organization ${organization.liveId} is the taxpayer the SAT knows` },
      ]);
    if (!deps.vault) throw new ApiError('vault_not_configured');
    const files = filesOf(parsed.data);
    try {
      const sealed = await sealEfirma(files, organization, {
        vault: deps.vault,
        at: new Date(),
        ...(deps.trustedCas ? { trustedCas: deps.trustedCas } : {}),
      });
      await storeEfirma(deps.clients.for(organization.id), sealed);
    } catch (error) {
      if (error instanceof CfdiError)
        throw new ApiError('efirma_rejected', undefined, [{ path: error.code, message: error.message }]);
      if (error instanceof EfirmaAlreadyStored) throw new ApiError('efirma_already_stored');
      throw error;
    }
    res.status(201).json(await deps.described(organization));
  });
}
