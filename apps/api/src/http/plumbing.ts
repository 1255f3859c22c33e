/**
 * What every request goes through before a route: security headers (HSTS only over TLS), its id and
 * duration metric, a refusal of credentials in the query string (cut from the URL before anything
 * logs it), and one lean log line.
 */
import { randomUUID } from 'node:crypto';
import type { Express, Request, Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { ApiError } from './errors.ts';
import type { Metrics } from './metrics.ts';

/** Query parameters that carry a credential (`?api_key=…`, `?token=…`): never accepted. */
const CREDENTIAL_PARAM =
  /^(api[_-]?key|apikey|x-api-key|key|token|access[_-]?token|authorization|auth|secret|password)$/i;

export function requestPlumbing(
  app: Express,
  { trustProxy, metrics, logger }: { trustProxy: unknown; metrics: Metrics; logger: Logger },
): void {
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy);
  // HSTS and CSP's upgrade-insecure-requests only mean something over TLS; sent over plain HTTP at a
  // non-loopback address, they made browsers refuse the dashboard and /facturar's form. HSTS goes
  // out on TLS (or https behind TRUST_PROXY); upgrade-insecure-requests never (the pages load
  // nothing from elsewhere).
  app.use(
    helmet({
      strictTransportSecurity: false,
      contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
    }),
  );
  app.use((req, res, next) => {
    if (req.secure) res.set('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    next();
  });
  app.use((req, res, next) => {
    const given = req.get('x-request-id');
    req.requestId = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    res.set('X-Request-Id', req.requestId);
    const end = metrics.httpDuration.startTimer({ method: req.method });
    res.on('finish', () =>
      end({ route: (req.route as { path?: string } | undefined)?.path ?? 'unmatched', status: String(res.statusCode) }),
    );
    next();
  });
  // A credential in the query string ends up in logs, proxies and browser histories: refused, and the
  // query is cut from the URL before anything logs it.
  app.use((req, _res, next) => {
    const query = req.url.indexOf('?');
    if (query < 0) return next();
    const names = [...new URLSearchParams(req.url.slice(query + 1)).keys()];
    if (!names.some((n) => CREDENTIAL_PARAM.test(n))) return next();
    req.url = `${req.url.slice(0, query)}?[redacted]`;
    next(new ApiError('credentials_in_query'));
  });
  app.use(
    pinoHttp({
      logger: logger,
      genReqId: (req) => (req as Request).requestId ?? randomUUID(),
      // One lean line per request: what happened and to what — no headers (security headers were
      // most of each line; credentials must never be there anyway).
      serializers: {
        req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customProps: (req, res) => requestLogProps(req as Request, res as Response),
      autoLogging: { ignore: (req) => req.url === '/healthz' },
    }),
  );
}

/**
 * What a request's log line says besides method, URL and status: its id, the route matched, the API
 * key's name, the error code of a refusal, and the payment or invoice it was about.
 */
export function requestLogProps(req: Request, res: Response): Record<string, unknown> {
  // pino-http asks at the request's start (the bindings of every line about it) and again at its end
  // (adding what is new): the id once at the start, the rest at the end, so no line says a key twice.
  if (!res.headersSent) return { requestId: req.requestId };
  const route = (req.route as { path?: string } | undefined)?.path;
  const id = (res.locals.ids as Record<string, string> | undefined)?.id;
  const about =
    id && route?.startsWith('/payments') ? 'paymentId' : id && route?.startsWith('/invoices') ? 'invoiceId' : undefined;
  return {
    ...(route ? { route } : {}),
    ...(req.client ? { key: req.client.name } : {}),
    ...(typeof res.locals.errorCode === 'string' ? { code: res.locals.errorCode } : {}),
    ...(about ? { [about]: id } : {}),
    ...(typeof res.locals.paymentId === 'string' ? { paymentId: res.locals.paymentId } : {}),
  };
}
