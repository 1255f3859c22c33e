/**
 * Products and customers: what a merchant sells and to whom. Reads by id, by the merchant's own
 * reference or by a provider's customer id; writes that report a unique index's refusal as a value
 * the caller names (`reference_taken`, `customer_conflict`), never as Prisma's error.
 */
import { Prisma } from '../generated/client.ts';
import { isUuid } from '../light.ts';
import type { Db } from '../sql.ts';
import { afterCursor, pageWindow, type PageQuery } from '../pages.ts';
import { metadataWhere, type Metadata } from '../metadata.ts';

export type ProductRow = Prisma.ProductGetPayload<object>;
export type CustomerRow = Prisma.CustomerGetPayload<object>;
export type NewProduct = Omit<Prisma.ProductUncheckedCreateInput, 'id' | 'createdAt' | 'updatedAt'>;
export type ProductChanges = Omit<Prisma.ProductUncheckedUpdateInput, 'id' | 'createdAt' | 'updatedAt'>;
export type NewCustomer = Omit<Prisma.CustomerUncheckedCreateInput, 'id' | 'createdAt' | 'updatedAt'>;
export type CustomerChanges = Omit<Prisma.CustomerUncheckedUpdateInput, 'id' | 'createdAt' | 'updatedAt'>;

/** Which provider id another customer already has, when a unique index refused a customer's write. */
export type CustomerConflict = { conflict: 'stripeCustomerId' | 'mercadoPagoPayerId' };

function uniqueViolation(error: unknown): string | undefined {
  if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')
    return `${JSON.stringify(error.meta ?? {})} ${error.message}`;
  return undefined;
}

const customerConflict = (error: unknown): CustomerConflict => {
  const field = uniqueViolation(error);
  if (field === undefined) throw error;
  return { conflict: /mercado/i.test(field) ? 'mercadoPagoPayerId' : 'stripeCustomerId' };
};

export function productByReference(db: Db, reference: string): Promise<ProductRow | null> {
  return db.product.findFirst({ where: { reference } });
}

export function productById(db: Db, id: string): Promise<ProductRow | null> {
  return db.product.findUnique({ where: { id } });
}

/** The products a sale's lines name, each by its id or its reference. */
export function productsNamed(db: Db, refs: readonly string[]): Promise<ProductRow[]> {
  if (refs.length === 0) return Promise.resolve([]);
  return db.product.findMany({
    where: { OR: [{ reference: { in: [...refs] } }, { id: { in: refs.filter(isUuid) } }] },
  });
}

export function insertProduct(db: Db, product: NewProduct): Promise<ProductRow> {
  return db.product.create({ data: product });
}

/** The product changed, or null when there is none with this id. */
export async function updateProduct(db: Db, id: string, changes: ProductChanges): Promise<ProductRow | null> {
  return db.product.update({ where: { id }, data: changes }).catch((error: unknown) => {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2025') return null;
    throw error;
  });
}

export function listProducts(db: Db, filter: { reference?: string | undefined }, page: PageQuery) {
  return db.product.findMany({
    where: { ...(filter.reference ? { reference: filter.reference } : {}), ...afterCursor(page.cursor) },
    ...pageWindow(page),
  });
}

/** A customer by our id or by a provider's customer id. */
export type CustomerRef = { id: string } | { stripe: string } | { mercadopago: string };

export function findCustomer(db: Db, ref: CustomerRef): Promise<CustomerRow | null> {
  if ('id' in ref) return isUuid(ref.id) ? db.customer.findUnique({ where: { id: ref.id } }) : Promise.resolve(null);
  if ('stripe' in ref) return db.customer.findFirst({ where: { stripeCustomerId: ref.stripe } });
  return db.customer.findFirst({ where: { mercadoPagoPayerId: ref.mercadopago } });
}

export function insertCustomer(db: Db, customer: NewCustomer): Promise<CustomerRow | CustomerConflict> {
  return db.customer.create({ data: customer }).catch(customerConflict);
}

export function updateCustomer(db: Db, id: string, changes: CustomerChanges): Promise<CustomerRow | CustomerConflict> {
  return db.customer.update({ where: { id }, data: changes }).catch(customerConflict);
}

export async function listCustomers(
  db: Db,
  filter: { rfc?: string | undefined; metadata?: Metadata | undefined },
  page: PageQuery,
) {
  return db.customer.findMany({
    where: {
      ...(await metadataWhere(db, 'customers', filter.metadata)),
      ...(filter.rfc ? { rfc: filter.rfc } : {}),
      ...afterCursor(page.cursor),
    },
    ...pageWindow(page),
  });
}
