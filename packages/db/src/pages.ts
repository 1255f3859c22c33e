/**
 * Cursor pagination, newest first, the same for every list: a page is `limit + 1` rows after the
 * cursor (the extra row says whether there is a next page); the API encodes the cursor it hands out.
 */

/** Where the previous page ended: its last row's creation time and id. */
export type Cursor = { createdAt: Date; id: string } | null;

/** What a list asks for: up to `limit` rows after `cursor`. */
export interface PageQuery {
  limit: number;
  cursor: Cursor;
}

/**
 * The rows strictly after `cursor` in newest-first order of `column` (then id): `createdAt`, or the
 * time a list is ordered by (a period's `issuedAt`, an event's `receivedAt`).
 */
export function afterCursor<C extends string = 'createdAt'>(cursor: Cursor, column: C = 'createdAt' as C) {
  return cursor
    ? { OR: [{ [column]: { lt: cursor.createdAt } }, { [column]: cursor.createdAt, id: { lt: cursor.id } }] }
    : {};
}

/** Prisma's `orderBy` and `take` for a page: newest first, one row more than asked. */
export function pageWindow(page: PageQuery) {
  return {
    orderBy: [{ createdAt: 'desc' as const }, { id: 'desc' as const }],
    take: page.limit + 1,
  };
}
