/**
 * The merchant's console at /console: sign in with an API key, search invoices, open one (its
 * documents, history, resend, cancel), correct what needs data, and deal with dead letters.
 * Server-rendered HTML without script, no build step. Every read and every change is a call to the
 * API with the signed-in key (api-client.ts), so the console can do exactly what that key's scopes
 * allow, in its organization only; a refusal is shown as the API gave it.
 */
import { randomBytes } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { keyPrefix } from '@timbra/db/keys';
import { crossSite } from '../http/html.ts';
import type { Metrics } from '../http/metrics.ts';
import { requestPlumbing } from '../http/plumbing.ts';
import { AddressVouch, apiFor, errorOf } from './api-client.ts';
import { field, refused, send } from './respond.ts';
import { at, escape, layout } from './layout.ts';
import { invoiceRoutes } from './invoice-console.ts';
import { workRoutes } from './work-console.ts';
import { SessionSeal } from './session.ts';

export interface ConsoleOptions {
  /** The API the console calls: the handler the server runs (one organization's app, or the platform's). */
  api: RequestHandler;
  /** Seals the sessions and signs the forms (every API instance must share it). */
  secret: string;
  sessionHours: number;
  logger: Logger;
  metrics: Metrics;
  trustProxy: unknown;
}

/** The console's settings (docs/configuration.md). */
export interface ConsoleSettings {
  CONSOLE_SECRET?: string | undefined;
  CONSOLE_SESSION_HOURS: number;
  TRUST_PROXY: unknown;
}

/**
 * The server's handler: the console at /console, everything else to `api`. Without CONSOLE_SECRET a
 * random one is drawn, said in the log: sessions then end with this process.
 */
export function withConsole(
  api: RequestHandler,
  settings: ConsoleSettings,
  deps: { logger: Logger; metrics: Metrics },
): Express {
  if (!settings.CONSOLE_SECRET)
    deps.logger.warn(
      'CONSOLE_SECRET not set: console sessions end with this process (set it with more than one API instance)',
    );
  const options: ConsoleOptions = {
    api,
    secret: settings.CONSOLE_SECRET ?? randomBytes(32).toString('base64url'),
    sessionHours: settings.CONSOLE_SESSION_HOURS,
    trustProxy: settings.TRUST_PROXY,
    ...deps,
  };
  const app = express();
  const vouch = new AddressVouch();
  app.disable('x-powered-by');
  app.use(vouch.middleware);
  app.use(at(''), consoleApp(options, vouch));
  app.use(api);
  return app;
}

function consoleApp(options: ConsoleOptions, vouch: AddressVouch): Express {
  const app = express();
  requestPlumbing(app, options);
  const seal = new SessionSeal(options.secret, options.sessionHours);
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const client = (req: Request, key: string) => apiFor(req, key, vouch);
  app.use((_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });
  app.get('/login', (_req, res) => void res.type('html').send(loginPage()));
  app.post('/login', form, async (req, res) => {
    const key = field(req, 'key');
    if (crossSite(req))
      return void res.status(403).type('html').send(loginPage('This sign-in did not come from this console.'));
    // The key is tried on the API itself: its limits on failed keys apply to this address.
    const tried = key ? await client(req, key).GET('/v1/invoices', { params: { query: { limit: 1 } } }) : undefined;
    if (!tried || tried.error) {
      const status = tried?.response.status ?? 401;
      const error = tried ? errorOf(tried.error, status) : undefined;
      const why =
        status === 403
          ? 'This key cannot read invoices (it needs the read scope).'
          : error?.code === 'rate_limited'
            ? error.message
            : 'That key was not accepted.';
      return void res
        .status(status === 429 ? 429 : 401)
        .type('html')
        .send(loginPage(why));
    }
    seal.start(req, res, key, await whoseKey(client(req, key), key));
    res.redirect(303, at('/invoices'));
  });
  app.use((req, res, next) => {
    const session = seal.of(req);
    if (!session) return res.redirect(303, at('/login'));
    req.signed = {
      session,
      timbra: client(req, session.key),
      chrome: {
        keyShown: session.label ?? `${keyPrefix(session.key)}…`,
        signOutToken: seal.token(session, 'logout'),
      },
      token: (action) => seal.token(session, action),
      checks: (action, given) => !crossSite(req) && seal.checks(session, action, given),
    };
    next();
  });
  app.post('/logout', form, (req, res) => {
    if (!req.signed!.checks('logout', field(req, 'token'))) return refused(req, res);
    seal.end(req, res);
    res.redirect(303, at('/login'));
  });
  app.get('/', (_req, res) => res.redirect(303, at('/invoices')));
  app.use(invoiceRoutes(form));
  app.use(workRoutes(form));
  app.use((req, res) => void send(req, res, 404, 'Not found', '<p>No such page in the console.</p>'));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    options.logger.error({ err: error, requestId: req.requestId }, 'console page failed');
    if (!res.headersSent)
      send(
        req,
        res,
        500,
        'Something failed',
        `<p>The page could not be made. Request ${escape(req.requestId ?? '')}.</p>`,
      );
  });
  return app;
}

/**
 * What the header says of a session: the key's name and its organization, `test` for a test
 * organization's — so an operator with several organizations or a test twin sees where they act.
 */
async function whoseKey(timbra: ReturnType<typeof apiFor>, key: string): Promise<string | undefined> {
  const me = await timbra.GET('/v1/keys/me');
  if (!me.data) return undefined;
  const { name, organization } = me.data;
  return `${name} (${keyPrefix(key)}…) · ${organization.nombre}${organization.mode === 'test' ? ' · test' : ''}`;
}

function loginPage(problem?: string): string {
  return layout(
    'Sign in',
    `${problem ? `<p class="problem" role="alert">${escape(problem)}</p>` : ''}
<form class="box" method="post" action="${at('/login')}">
<p>Sign in with one of your API keys. The console does what that key may do, nothing more: a key without <code>cancel</code> cannot cancel here either.</p>
<div class="fields"><label for="key">API key<input id="key" name="key" type="password" autocomplete="off" required size="40"></label>
<button type="submit">Sign in</button></div>
<p class="hint">The key is kept only in this browser's session cookie, sealed; signing out forgets it.</p>
</form>`,
  );
}
