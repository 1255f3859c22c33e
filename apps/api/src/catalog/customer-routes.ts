/** Customers: whom a merchant sells to, entered once and named by the sales that use them. */
import { Router, type Request, type Response } from 'express';
import {
  findCustomer,
  insertCustomer,
  listCustomers,
  updateCustomer,
  type CustomerConflict,
  type CustomerRow,
} from '@timbra/db/catalog';
import { changeMetadata, newMetadata } from '@timbra/db';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import { changed, listParams, metadataFilter, pageOf } from '../http/lists.ts';
import { customerProblems, customerSchema } from './catalog-schemas.ts';
import { parse, type CatalogRoutesDeps } from './product-routes.ts';

export function customerView(c: CustomerRow) {
  return {
    id: c.id,
    rfc: c.rfc,
    nombre: c.nombre,
    codigoPostal: c.codigoPostal,
    regimenFiscal: c.regimenFiscal,
    usoCfdi: c.usoCfdi,
    email: c.email,
    stripeCustomerId: c.stripeCustomerId,
    mercadoPagoPayerId: c.mercadoPagoPayerId,
    metadata: c.metadata,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

/** The customer written, or 409 customer_conflict naming the provider id another customer has. */
function written(customer: CustomerRow | CustomerConflict): CustomerRow {
  if ('conflict' in customer)
    throw new ApiError('customer_conflict', undefined, [
      { path: customer.conflict, message: 'another customer has it' },
    ]);
  return customer;
}

export function customerRoutes(deps: CatalogRoutesDeps): Router {
  const router = Router();
  uuidParams(router, 'id');
  const respondOnce = idempotentResponder(deps);

  router.post('/customers', async (req: Request, res: Response) => {
    const input = parse(customerSchema, req.body);
    const problems = customerProblems(input);
    if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
    await respondOnce(req, res, '/v1/customers', input, async (tx) => {
      const customer = written(
        await insertCustomer(tx, {
          rfc: input.rfc,
          nombre: input.nombre,
          codigoPostal: input.codigoPostal,
          regimenFiscal: input.regimenFiscal,
          usoCfdi: input.usoCfdi,
          email: input.email ?? null,
          stripeCustomerId: input.stripeCustomerId ?? null,
          mercadoPagoPayerId: input.mercadoPagoPayerId ?? null,
          metadata: newMetadata(input.metadata),
        }),
      );
      return { status: 201, body: customerView(customer) };
    });
  });

  router.patch('/customers/:id', async (req: Request, res: Response) => {
    const id = String(req.params.id);
    const input = parse(customerSchema.partial().strict(), req.body);
    const { acceptCheckDigitMismatch, metadata, ...fields } = input;
    if (Object.keys(fields).length === 0 && metadata === undefined)
      throw new ApiError('validation_failed', undefined, [{ path: '', message: 'give at least one field' }]);
    const current = await findCustomer(deps.prisma, { id });
    if (!current) throw new ApiError('not_found');
    // The customer as it would be, checked as a whole (a new régimen must still allow the UsoCFDI).
    const problems = customerProblems({
      rfc: fields.rfc ?? current.rfc,
      nombre: fields.nombre ?? current.nombre,
      codigoPostal: fields.codigoPostal ?? current.codigoPostal,
      regimenFiscal: fields.regimenFiscal ?? current.regimenFiscal,
      usoCfdi: fields.usoCfdi ?? current.usoCfdi,
      ...(acceptCheckDigitMismatch !== undefined ? { acceptCheckDigitMismatch } : {}),
      // An RFC not changed now was checked when it was entered.
      ...(fields.rfc === undefined ? { acceptCheckDigitMismatch: true } : {}),
    });
    if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
    // The fields and the metadata change together or not at all.
    const customer = await deps.prisma.$transaction(async (tx) => {
      if (metadata !== undefined) changed(await changeMetadata(tx, 'customers', id, metadata));
      return written(await updateCustomer(tx, id, fields));
    });
    res.json(customerView(customer));
  });

  router.get('/customers/:id', async (req, res) => {
    const customer = await findCustomer(deps.prisma, { id: String(req.params.id) });
    if (!customer) throw new ApiError('not_found');
    res.json(customerView(customer));
  });

  router.get('/customers', async (req, res) => {
    const { limit, cursor } = listParams(req, ['rfc', 'metadata']);
    const rfc = typeof req.query.rfc === 'string' ? req.query.rfc.toUpperCase() : undefined;
    const rows = await listCustomers(deps.prisma, { rfc, metadata: metadataFilter(req) }, { limit, cursor });
    res.json(pageOf(rows, limit, customerView));
  });

  return router;
}
