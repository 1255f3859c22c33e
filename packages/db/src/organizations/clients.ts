/**
 * Many organizations' clients over one connection pool and one Prisma client: platform mode's API
 * serves every organization from one process. A Prisma client costs ~3 MB and ~20 ms to make
 * (measured: 50 in 934 ms), and a pool an organization would hold connections by the thousand; an
 * extension of one client costs ~10 KB.
 *
 * Every connection of the shared pool opens as the role timbra_app with no organization named (it
 * sees no tenant row). Before a statement runs on a connection, the connection is made to work for
 * the organization of the client that sends it: when it last worked for another (or none), its
 * session's app.org is set first (`set_config`, one round trip); a connection that keeps working for
 * the same organization costs nothing more. A lean transaction (lean.ts) sets it in its own first
 * message instead, for the transaction only (`set_config(…, true)`, as SET LOCAL): no round trip, and
 * the session — committed or rolled back — still works for the organization it did. Row-level
 * security then holds each statement to that organization, as it holds
 * `createPrisma(url, { organization })`'s.
 *
 * Which organization: the lean runner's statements carry theirs explicitly (a pool view an
 * organization). Prisma's reach the adapter through the Prisma runtime, so each organization's
 * client (an extension of the one client) runs every operation, and every interactive transaction,
 * inside an AsyncLocalStorage scope naming its organization, which the pool reads when it hands out a
 * connection. Two things of the runtime would carry a statement out of its scope, and both are
 * closed here: it groups `findUnique` calls made in one tick into one query, dispatched in the
 * scope of the first (so they are sent one by one), and it dispatches batch transactions
 * (`$transaction([...])`) the same way (so an organization client refuses them; interactive
 * transactions are fine: their statements run on the connection their start took). A connection
 * handed out with no organization in scope names none and sees nothing. The tests in
 * organization-clients.test.ts would fail if a later Prisma moved a statement out of its scope.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { PrismaClient } from '../generated/client.ts';
import { prismaOver } from '../client.ts';
import {
  heardForLife,
  leanDbOver,
  plannedOnceSessions,
  registerLeanDb,
  type LeanDb,
  type SetInBegin,
} from '../lean.ts';
import { isUuid } from '../light.ts';
import { APP_ROLE } from './session.ts';

/** The organization each connection of a shared pool works for now (what its session's app.org says). */
const workingFor = new WeakMap<pg.PoolClient, string>();

/** An error Postgres answered (it has a SQLSTATE): the connection that carried it is still sound. */
function answeredByPostgres(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * A `pg.Pool` as Prisma's driver adapter and the lean runner use one (`connect`, `query`, `end`),
 * whose connections come from `shared` and work for the organization `organization()` names when
 * each is handed out ('' names none). `end` ends nothing: the shared pool belongs to
 * `OrganizationClients`.
 */
function poolFor(shared: pg.Pool, organization: () => string): pg.Pool {
  // A real Pool (the adapter checks `instanceof pg.Pool`) that never opens a connection of its own.
  const view = new pg.Pool({ max: 1 });
  let ended = false;
  // A connection from the shared pool, and whether its session already works for the organization.
  const handOut = async (org: string) => {
    if (ended) throw new Error('this organization client was disconnected');
    const client = await shared.connect();
    return { client, current: workingFor.get(client) === org };
  };
  const connect = async (): Promise<pg.PoolClient> => {
    const org = organization();
    const { client, current } = await handOut(org);
    if (current) return client;
    try {
      await client.query("SELECT set_config('app.org', $1, false)", [org]);
    } catch (error) {
      client.release(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    workingFor.set(client, org);
    return client;
  };
  const query = async (config: string | pg.QueryConfig, values?: unknown, ...rest: unknown[]) => {
    if (typeof values === 'function' || rest.some((r) => typeof r === 'function'))
      throw new TypeError('an organization client takes promises, not callbacks');
    const client = await connect();
    try {
      const result = await client.query(config as pg.QueryConfig, values as unknown[] | undefined);
      client.release();
      return result;
    } catch (error) {
      // A statement Postgres refused leaves the connection usable; anything else (it broke) drops it.
      client.release(answeredByPostgres(error) ? undefined : (error as Error));
      throw error;
    }
  };
  // A lean transaction's connection: its organization set by the transaction's first message.
  const connectForTransaction: SetInBegin['connectForTransaction'] = async () => {
    // Written into the first message's text: only ids (or '' for none) get there. (`connect` sends
    // it as a parameter: no check on every statement.)
    const org = organization();
    if (org !== '' && !org.split(',').every(isUuid)) throw new Error(`not organization ids: ${JSON.stringify(org)}`);
    const { client, current } = await handOut(org);
    return { client, setLocal: current ? '' : `SELECT set_config('app.org', '${org}', true)` };
  };
  Object.assign(view, {
    connect,
    connectForTransaction,
    query,
    end: () => {
      ended = true;
      return Promise.resolve();
    },
  });
  Object.defineProperty(view, 'ending', { get: () => ended });
  return view;
}

/** What the Prisma runtime's request loader looks like from here (`_requestHandler.dataloader`). */
interface RequestLoader {
  request: (request: { transaction?: { kind?: string } }) => Promise<unknown>;
  options: { singleLoader: (request: unknown) => Promise<unknown> };
}

/**
 * Makes `prisma` send each statement from the scope of its caller: requests outside a transaction
 * go straight to the engine (not grouped into the next tick's batch), batch transactions are refused.
 * Fails loudly if the runtime is not shaped as this expects (a Prisma upgrade changed it).
 */
function sendFromCallerScope(prisma: PrismaClient): void {
  const loader = (prisma as unknown as { _requestHandler?: { dataloader?: RequestLoader } })._requestHandler
    ?.dataloader;
  if (!loader || typeof loader.request !== 'function' || typeof loader.options?.singleLoader !== 'function')
    throw new Error("the Prisma runtime's request loader is not where organizations/clients.ts expects it");
  const batched = loader.request.bind(loader);
  loader.request = (request) => {
    if (!request.transaction) return loader.options.singleLoader(request);
    if (request.transaction.kind === 'batch')
      return Promise.reject(
        new Error('an organization client runs no batch transaction: use $transaction(async (tx) => …)'),
      );
    return batched(request);
  };
}

/** Statements for several organizations at once: `OrganizationClients.across()`. */
export interface SeveralOrganizations {
  /** `fn`'s statements on sessions naming exactly `organizationIds` (at least one). */
  run<T>(organizationIds: readonly string[], fn: (db: LeanDb) => Promise<T>): Promise<T>;
}

/**
 * The clients of every organization of a deployment, over one pool of `poolSize` connections (and
 * at most two beside it for statements planned once, as `createPrisma`'s). `for(id)` returns the
 * organization's client, made on first use and kept; `close()` ends them all and the pools.
 */
export class OrganizationClients {
  private readonly shared: pg.Pool;
  private readonly plannedOnce: pg.Pool;
  private readonly scope = new AsyncLocalStorage<string>();
  /** The organizations a statement `across()` runs for: their ids, sorted, comma-separated. */
  private readonly acrossScope = new AsyncLocalStorage<string>();
  private acrossDb: LeanDb | undefined;
  private readonly base: PrismaClient;
  private readonly clients = new Map<string, PrismaClient>();
  /**
   * A client that names no organization: it sees no tenant row. What it is for: the questions asked
   * before an organization is known (which organization an API key belongs to: `keyOrganization`).
   */
  readonly unscoped: PrismaClient;

  constructor(databaseUrl: string, options: { poolSize?: number } = {}) {
    const role = `-c role=${APP_ROLE}`;
    this.shared = heardForLife(
      new pg.Pool({ connectionString: databaseUrl, max: options.poolSize ?? 10, options: role }),
    );
    this.plannedOnce = plannedOnceSessions(databaseUrl, role);
    // app.org '' is no organization (timbra_organization() reads it as NULL).
    this.base = prismaOver(poolFor(this.shared, () => this.scope.getStore() ?? ''));
    sendFromCallerScope(this.base);
    this.unscoped = this.base;
  }

  /** The client of `organizationId` (a UUID: the organization's `emisores.id`). */
  for(organizationId: string): PrismaClient {
    if (!isUuid(organizationId))
      throw new Error(`an organization is named by its id (a UUID), not ${JSON.stringify(organizationId)}`);
    const id = organizationId.toLowerCase();
    let client = this.clients.get(id);
    if (!client) {
      client = this.clientOf(id);
      this.clients.set(id, client);
    }
    return client;
  }

  private clientOf(id: string): PrismaClient {
    const scope = this.scope;
    const extended = this.base.$extends({
      // A Prisma promise sends its request when first awaited: awaited here, inside the scope.
      query: { $allOperations: ({ args, query }) => scope.run(id, async (): Promise<unknown> => await query(args)) },
    }) as unknown as PrismaClient;
    // An interactive transaction takes its connection when it starts: in the organization's scope.
    const client = new Proxy(extended, {
      get(target, property, receiver) {
        if (property === '$transaction')
          return (fn: unknown, options?: unknown) => {
            if (typeof fn !== 'function')
              throw new Error('an organization client runs no batch transaction: use $transaction(async (tx) => …)');
            return scope.run(id, () => target.$transaction(fn as never, options as never));
          };
        // Its connections are the deployment's: disconnecting one organization ends nothing.
        if (property === '$disconnect') return () => Promise.resolve();
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    registerLeanDb(
      client,
      leanDbOver(
        poolFor(this.shared, () => id),
        undefined,
        poolFor(this.plannedOnce, () => id),
      ),
    );
    return client;
  }

  /**
   * A runner for statements that work for several organizations at once (a batch of the stamper's
   * writes): `run(ids, fn)` runs `fn`'s statements on connections whose session names exactly those
   * organizations (app.org, comma-separated; migration 20270114000000), so row-level security lets
   * them see and write those organizations' rows and no other's. Each row a statement writes must
   * name its organization (none is the default), and each statement must match each item to the
   * rows of its own organization: the policies hold the batch to its organizations, not an item to
   * its own.
   */
  across(): SeveralOrganizations {
    if (!this.acrossDb) {
      const named = () => this.acrossScope.getStore() ?? '';
      this.acrossDb = leanDbOver(poolFor(this.shared, named), undefined, poolFor(this.plannedOnce, named));
    }
    const db = this.acrossDb;
    const scope = this.acrossScope;
    return {
      run: <T>(organizationIds: readonly string[], fn: (db: LeanDb) => Promise<T>): Promise<T> => {
        const ids = [...new Set(organizationIds.map((id) => id.toLowerCase()))].sort();
        const bad = ids.find((id) => !isUuid(id));
        if (bad !== undefined || ids.length === 0)
          return Promise.reject(new Error(`organizations are named by their ids, not ${JSON.stringify(bad ?? ids)}`));
        return scope.run(ids.join(','), () => fn(db));
      },
    };
  }

  async close(): Promise<void> {
    this.clients.clear();
    await this.base.$disconnect();
    await Promise.all([this.shared.end(), this.plannedOnce.end()]);
  }
}
