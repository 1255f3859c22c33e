import { timingSafeEqual } from 'node:crypto';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { faultsSchema, meanLatency, NO_FAULTS, seededRandom, type Faults } from '../faults.ts';
import { PacInstance } from '../pac-instance.ts';
import type { SatRegistry } from '../registry.ts';
import { taxpayerSchema, validationSchema, type TaxpayerList, type ValidationSwitches } from '../validation.ts';

export interface AdminDeps {
  token: string;
  registry: SatRegistry;
  taxpayers: TaxpayerList;
  /** The switches instances start with (a reset restores them). */
  validation: ValidationSwitches;
  instances: ReadonlyMap<string, PacInstance>;
  /** The instance a request means when it names none (the one whose port it came in on). */
  defaultInstance?: string;
  /** Applies side effects of new faults (outage windows close and reopen ports). */
  onFaultsChanged: (instance: PacInstance) => void;
  onReset: () => void;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The admin API (`/__admin`), guarded by `Authorization: Bearer <token>` (or `x-admin-token`):
 * faults per instance, the ledger of every stamp and request, reset. See the README.
 */
export function adminRoutes(deps: AdminDeps): Router {
  const router = Router();
  router.use((req: Request, res: Response, next: NextFunction) => {
    const given = /^Bearer (.+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? req.get('x-admin-token') ?? '';
    if (!safeEqual(given, deps.token)) {
      res.status(401).json({ error: { code: 'unauthorized', message: 'admin token required' } });
      return;
    }
    next();
  });

  faultRoutes(router, deps);
  taxpayerRoutes(router, deps);
  router.get('/ledger', (req, res) => res.json(ledger(deps, req)));
  router.post('/reset', (_req, res) => {
    reset(deps);
    res.json({ ok: true });
  });
  return router;
}

/** The instance a request names (query or body), or the default; a 404 answered when none. */
function pickInstance(deps: AdminDeps, req: Request, res: Response): PacInstance | undefined {
  const body = (req.body ?? {}) as { instance?: unknown };
  const name =
    (typeof req.query.instance === 'string' ? req.query.instance : undefined) ??
    (typeof body.instance === 'string' ? body.instance : undefined) ??
    deps.defaultInstance;
  const instance = name ? deps.instances.get(name) : undefined;
  if (!instance)
    res
      .status(404)
      .json({ error: { code: 'unknown_instance', message: `instances: ${[...deps.instances.keys()].join(', ')}` } });
  return instance;
}

/** An instance's faults as the admin API answers them, with the mean of its latency (a benchmark's bound). */
const faultsAnswer = (name: string, faults: Faults) => ({
  instance: name,
  faults,
  meanLatencyMs: meanLatency(faults.latencyMs),
});

/** `/faults` and `/validation`: what each instance does to the requests it receives. */
function faultRoutes(router: Router, deps: AdminDeps): void {
  const pick = (req: Request, res: Response) => pickInstance(deps, req, res);
  router.get('/faults', (req, res) => {
    const instance = pick(req, res);
    if (instance) res.json(faultsAnswer(instance.name, instance.faults));
  });

  router.post('/faults', (req, res) => {
    const instance = pick(req, res);
    if (!instance) return;
    const { instance: _name, reset, seed, ...changes } = (req.body ?? {}) as Record<string, unknown>;
    const parsed = faultsSchema.safeParse({ ...(reset === true ? NO_FAULTS : instance.faults), ...changes });
    if (!parsed.success) {
      res
        .status(422)
        .json({ error: { code: 'invalid_faults', message: 'invalid faults', details: parsed.error.issues } });
      return;
    }
    if (typeof seed === 'number') instance.random = seededRandom(seed);
    instance.faults = parsed.data;
    deps.onFaultsChanged(instance);
    res.json(faultsAnswer(instance.name, instance.faults));
  });

  router.delete('/faults', (_req, res) => {
    for (const instance of deps.instances.values()) {
      instance.faults = NO_FAULTS;
      deps.onFaultsChanged(instance);
    }
    res.json({ ok: true });
  });

  router.get('/validation', (req, res) => {
    const instance = pick(req, res);
    if (instance) res.json({ instance: instance.name, validation: instance.validation });
  });

  router.post('/validation', (req, res) => {
    const instance = pick(req, res);
    if (!instance) return;
    const { instance: _name, ...changes } = (req.body ?? {}) as Record<string, unknown>;
    const parsed = validationSchema.safeParse({ ...instance.validation, ...changes });
    if (!parsed.success) {
      res.status(422).json({
        error: { code: 'invalid_validation', message: 'xsd and rules are booleans', details: parsed.error.issues },
      });
      return;
    }
    instance.validation = parsed.data;
    res.json({ instance: instance.name, validation: instance.validation });
  });
}

/** `/taxpayers`: the sandbox's list of the SAT's taxpayers (RFC, name, regime, postal code). */
function taxpayerRoutes(router: Router, deps: AdminDeps): void {
  router.get('/taxpayers', (_req, res) => {
    res.json({ data: deps.taxpayers.all() });
  });

  router.get('/taxpayers/:rfc', (req, res) => {
    const found = deps.taxpayers.get(String(req.params.rfc));
    if (!found) res.status(404).json({ error: { code: 'not_found', message: 'not in the taxpayer list' } });
    else res.json(found);
  });

  router.put('/taxpayers/:rfc', (req, res) => {
    const parsed = taxpayerSchema.safeParse(req.body ?? {});
    if (!parsed.success) {
      res
        .status(422)
        .json({ error: { code: 'invalid_taxpayer', message: 'invalid taxpayer', details: parsed.error.issues } });
      return;
    }
    deps.taxpayers.put({ rfc: String(req.params.rfc), ...parsed.data });
    res.json(deps.taxpayers.get(String(req.params.rfc)));
  });

  router.delete('/taxpayers/:rfc', (req, res) => {
    res.json({ deleted: deps.taxpayers.delete(String(req.params.rfc)) });
  });
}

/** Every stamp since a moment (without their XML), the duplicates by cadena, counts, requests received. */
function ledger(deps: AdminDeps, req: Request) {
  const since = typeof req.query.since === 'string' ? req.query.since : '';
  const stamps = deps.registry.stamps
    .filter((s) => s.stampedAt >= since)
    .map(({ tfdXml: _t, stampedXml: _x, ...rest }) => rest);
  const byCadena = new Map<string, string[]>();
  for (const s of deps.registry.stamps) byCadena.set(s.cadenaHash, [...(byCadena.get(s.cadenaHash) ?? []), s.uuid]);
  const duplicates = [...byCadena.entries()]
    .filter(([, uuids]) => uuids.length > 1)
    .map(([cadenaHash, uuids]) => ({ cadenaHash, uuids }));
  const counts = Object.fromEntries([...deps.instances.values()].map((i) => [i.name, i.counts]));
  const received = req.query.received === 'false' ? undefined : deps.registry.received.filter((r) => r.at >= since);
  // `coversSince`: a window that starts before it is not all there (the sandbox restarted without a state file, or was reset).
  return { coversSince: deps.registry.coversSince, stamps, duplicates, counts, ...(received ? { received } : {}) };
}

function reset(deps: AdminDeps): void {
  deps.registry.clear();
  for (const instance of deps.instances.values()) {
    instance.memory.clear();
    instance.faults = NO_FAULTS;
    instance.counts = PacInstance.zeroCounts();
    instance.validation = deps.validation;
    deps.onFaultsChanged(instance);
  }
  deps.taxpayers.reset();
  deps.onReset();
}
