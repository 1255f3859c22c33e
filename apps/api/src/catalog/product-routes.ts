/**
 * Products: what a merchant sells, entered once and named by the sales that use them (customers:
 * customer-routes.ts). Changing either never touches a frozen document — a payment copies what it needs
 * when it is recorded (a correction changes a CFDI, PATCH /v1/invoices/:id).
 */
import { Router, type Request, type Response } from 'express';
import type { z } from 'zod';
import type { PrismaClient } from '@timbra/db';
import {
  insertProduct,
  listProducts,
  productById,
  productByReference,
  updateProduct,
  type ProductRow,
} from '@timbra/db/catalog';
import type { OperatorCatalogs } from '@timbra/cfdi-core';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import type { Metrics } from '../http/metrics.ts';
import { claveProdServProblem, productPatchSchema, productSchema, taxesSchema } from './catalog-schemas.ts';
import { listParams, pageOf, validation } from '../http/lists.ts';

export interface CatalogRoutesDeps {
  prisma: PrismaClient;
  /** The operator's c_ClaveProdServ, when supplied: a product's key must be in it. */
  catalogs?: OperatorCatalogs | undefined;
  idempotencyTtlHours: number;
  metrics: Metrics;
}

export function productView(p: ProductRow) {
  return {
    id: p.id,
    reference: p.reference,
    descripcion: p.descripcion,
    claveProdServ: p.claveProdServ,
    claveUnidad: p.claveUnidad,
    unidad: p.unidad,
    taxes: taxesSchema.parse(p.taxes),
    unitPrice: p.unitPrice?.toFixed() ?? null,
    priceIncludesTax: p.priceIncludesTax,
    active: p.active,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

export function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw validation(parsed.error);
  return parsed.data;
}

function refuseUnknownClave(key: string | undefined, catalogs: OperatorCatalogs | undefined): void {
  const problem = claveProdServProblem(key, catalogs);
  if (problem) throw new ApiError('validation_failed', undefined, [problem]);
}

export function productRoutes(deps: CatalogRoutesDeps): Router {
  const router = Router();
  uuidParams(router, 'id');
  const respondOnce = idempotentResponder(deps);

  router.post('/products', async (req: Request, res: Response) => {
    const input = parse(productSchema, req.body);
    refuseUnknownClave(input.claveProdServ, deps.catalogs);
    await respondOnce(req, res, '/v1/products', input, async (tx) => {
      const existing = await productByReference(tx, input.reference);
      if (existing)
        throw new ApiError('product_reference_taken', undefined, [{ path: 'reference', message: existing.id }]);
      const product = await insertProduct(tx, {
        reference: input.reference,
        descripcion: input.descripcion,
        claveProdServ: input.claveProdServ,
        claveUnidad: input.claveUnidad,
        unidad: input.unidad ?? null,
        taxes: input.taxes,
        unitPrice: input.unitPrice ?? null,
        priceIncludesTax: input.priceIncludesTax,
        active: input.active,
      });
      return { status: 201, body: productView(product) };
    });
  });

  router.patch('/products/:id', async (req: Request, res: Response) => {
    const id = String(req.params.id);
    const input = parse(productPatchSchema, req.body);
    refuseUnknownClave(input.claveProdServ, deps.catalogs);
    if (Object.keys(input).length === 0)
      throw new ApiError('validation_failed', undefined, [{ path: '', message: 'give at least one field' }]);
    const product = await updateProduct(deps.prisma, id, { ...input, ...(input.taxes ? { taxes: input.taxes } : {}) });
    if (!product) throw new ApiError('not_found');
    res.json(productView(product));
  });

  router.get('/products/:id', async (req, res) => {
    const product = await productById(deps.prisma, String(req.params.id));
    if (!product) throw new ApiError('not_found');
    res.json(productView(product));
  });

  router.get('/products', async (req, res) => {
    const { limit, cursor } = listParams(req, ['reference']);
    const reference = typeof req.query.reference === 'string' ? req.query.reference : undefined;
    const rows = await listProducts(deps.prisma, { reference }, { limit, cursor });
    res.json(pageOf(rows, limit, productView));
  });

  return router;
}
