import { Router, type Request, type Response } from 'express';
import busboy from 'busboy';
import { CfdiError, loadCsd, satVerificationUrl, verificationQrPng } from '@timbra/cfdi-core';
import { acuseXml, requestCancellation, type CancellationPolicy } from '../cancellation.ts';
import type { PacInstance, StampOutcome } from '../pac-instance.ts';
import type { SatRegistry, StampRecord } from '../registry.ts';
import { beforeProcessing, dropAfterProcessing } from './fault-middleware.ts';

export interface SwRoutesDeps {
  instance: PacInstance;
  registry: SatRegistry;
  credentials: { user: string; password: string };
  policy: CancellationPolicy;
  now: () => Date;
}

/** SW answers: `{ status, data, message, messageDetail }`. */
function swError(res: Response, http: number, message: string, detail?: string, data?: unknown): void {
  res
    .status(http)
    .json({ status: 'error', message, ...(detail ? { messageDetail: detail } : {}), ...(data ? { data } : {}) });
}

/**
 * SW Sapién REST: authentication (JSON and legacy header forms), stamp v1–v4 with and without the
 * `/v4` prefix and `/b64` variants, lookup by UUID and by customid, cancellation by CSD.
 */
export function swRoutes(deps: SwRoutesDeps): Router {
  const { instance } = deps;
  const router = Router();
  router.post('/v2/security/authenticate', (req, res) => {
    const body = (req.body ?? {}) as { user?: unknown; password?: unknown };
    authenticate(deps, body.user, body.password, res);
  });
  router.post('/security/authenticate', (req, res) => authenticate(deps, req.get('user'), req.get('password'), res));

  for (const prefix of ['/v4/cfdi33/stamp', '/cfdi33/stamp']) {
    router.post(`${prefix}/:version`, (req, res) => stamp(deps, false, req, res));
    router.post(`${prefix}/:version/b64`, (req, res) => stamp(deps, true, req, res));
  }

  router.get('/datawarehouse/v1/live/:uuid', (req, res) => {
    if (!requireToken(instance, req, res)) return;
    const record = deps.registry.get(String(req.params.uuid));
    if (!record || record.instance !== instance.name) return swError(res, 404, 'No se encontró el UUID.');
    res.json({ status: 'success', data: { uuid: record.uuid, cfdi: record.stampedXml, tfd: record.tfdXml } });
  });

  // What this instance stamped under a customid (the document the customid was first used for), or
  // 404: the proof a correction asks for before it replaces a version. Faults apply, as to a stamp.
  router.get('/datawarehouse/v1/live/customid/:customid', async (req, res) => {
    if (!requireToken(instance, req, res)) return;
    if (!(await beforeProcessing(instance, res))) return;
    const cadena = instance.memory.customids.get(String(req.params.customid));
    const record = cadena === undefined ? undefined : instance.memory.byCadena.get(cadena);
    if (!record) return swError(res, 404, 'No se encontró un timbre para el customid.');
    res.json({ status: 'success', data: { uuid: record.uuid, cfdi: record.stampedXml, tfd: record.tfdXml } });
  });

  router.post('/cfdi33/cancel/csd', (req, res) => cancel(deps, req, res));
  return router;
}

function authenticate(deps: SwRoutesDeps, user: unknown, password: unknown, res: Response): void {
  if (user !== deps.credentials.user || password !== deps.credentials.password)
    return swError(res, 401, 'AU1001 - Usuario o contraseña inválidos.');
  const { token, expiresInS } = deps.instance.issueToken();
  res.json({ status: 'success', data: { token, expires_in: expiresInS, tokeny_type: 'bearer' } });
}

function requireToken(instance: PacInstance, req: Request, res: Response): boolean {
  const token = /^Bearer (.+)$/i.exec(req.get('authorization') ?? '')?.[1];
  if (instance.tokenValid(token)) return true;
  swError(res, 401, 'AU4101 - El token proporcionado no es válido o ha expirado.');
  return false;
}

/** Stamp v1–v4, the XML as a multipart part (`b64`: base64 in and out). */
async function stamp(deps: SwRoutesDeps, b64: boolean, req: Request, res: Response): Promise<void> {
  const { instance } = deps;
  instance.counts.requests++;
  if (!requireToken(instance, req, res)) return;
  const version = String(req.params.version);
  if (!['v1', 'v2', 'v3', 'v4'].includes(version)) return swError(res, 404, 'Versión de respuesta no soportada.');
  if (!(await beforeProcessing(instance, res))) return;
  let xml: string;
  try {
    const part = await readXmlPart(req);
    xml = b64 ? Buffer.from(part, 'base64').toString('utf8') : part;
  } catch (error) {
    return swError(res, 400, '301. La estructura del comprobante es incorrecta.', (error as Error).message);
  }
  const customid = req.get('customid') || undefined;
  const outcome = await instance.stamp(xml, customid, 'sw');
  if (outcome.kind !== 'rejected' && dropAfterProcessing(instance, res)) return;
  // v4 carries the QR of the printed representation, as SW's does (a PNG, base64).
  const qrCode = version === 'v4' && outcome.kind === 'stamped' ? await qrCodeOf(outcome.record) : '';
  answerStamp(res, outcome, version, b64, qrCode);
}

/** Cancellation by CSD: the certificate, key and password in the body prove the RFC. */
function cancel(deps: SwRoutesDeps, req: Request, res: Response): void {
  const { instance } = deps;
  if (!requireToken(instance, req, res)) return;
  const body = (req.body ?? {}) as Record<string, unknown>;
  const str = (k: string) => (typeof body[k] === 'string' ? body[k] : '');
  let rfc: string;
  try {
    const csd = loadCsd(Buffer.from(str('b64Cer'), 'base64'), Buffer.from(str('b64Key'), 'base64'), str('password'));
    rfc = csd.rfc;
  } catch (error) {
    return swError(
      res,
      400,
      'CA1000 - El certificado, la llave o la contraseña son inválidos.',
      error instanceof CfdiError ? error.code : undefined,
    );
  }
  if (rfc !== str('rfc')) return swError(res, 400, 'CA1001 - El RFC no corresponde al certificado.');
  const uuid = str('uuid').toUpperCase();
  const result = requestCancellation(
    deps.registry,
    {
      uuid,
      rfcEmisor: rfc,
      motivo: str('motivo'),
      ...(str('folioSustitucion') ? { folioSustitucion: str('folioSustitucion') } : {}),
    },
    deps.now().getTime(),
    deps.policy,
    instance.faults.rejectCancellationBy,
  );
  if ('error' in result) return swError(res, 400, result.error);
  // Recorded at the "SAT", then the answer lost (stamp-then-drop for cancellations).
  if (dropAfterProcessing(instance, res)) return;
  res.json({
    status: 'success',
    data: { acuse: acuseXml(rfc, uuid, result.code, deps.now()), uuid: { [uuid]: result.code } },
  });
}

/**
 * The SAT verification URL's QR, as SW's v4 answer carries it: a PNG, base64. The URL is made from what
 * the stamp recorded (no second parse of the CFDI).
 */
async function qrCodeOf(r: StampRecord): Promise<string> {
  const url = satVerificationUrl({
    uuid: r.uuid,
    rfcEmisor: r.rfcEmisor,
    rfcReceptor: r.rfcReceptor,
    total: r.total,
    sello: r.sat.selloCFD,
  });
  return (await verificationQrPng(url, { maskPattern: 0 })).toString('base64');
}

function answerStamp(res: Response, outcome: StampOutcome, version: string, b64: boolean, qrCode: string): void {
  const enc = (text: string) => (b64 ? Buffer.from(text, 'utf8').toString('base64') : text);
  if (outcome.kind === 'rejected') {
    const message = /^\d+$/.test(outcome.code)
      ? `${outcome.code}. ${outcome.message}`
      : `${outcome.code} - ${outcome.message}`;
    return swError(res, 400, message);
  }
  const r = outcome.record;
  if (outcome.kind === 'previous') {
    if (outcome.code === 'CFDI3307') {
      return swError(res, 400, 'CFDI3307 - Timbre duplicado. El customId proporcionado está duplicado.', undefined, {
        tfd: enc(r.tfdXml),
      });
    }
    return swError(res, 400, '307. El comprobante contiene un timbre previo.', undefined, {
      cfdi: enc(r.stampedXml),
      tfd: enc(r.tfdXml),
    });
  }
  const data: Record<string, string> =
    version === 'v1'
      ? { tfd: enc(r.tfdXml) }
      : version === 'v2'
        ? { tfd: enc(r.tfdXml), cfdi: enc(r.stampedXml) }
        : version === 'v3'
          ? { cfdi: enc(r.stampedXml) }
          : v4Data(r, enc, qrCode);
  res.json({ status: 'success', data });
}

function v4Data(r: StampRecord, enc: (text: string) => string, qrCode: string): Record<string, string> {
  return {
    cadenaOriginalSAT: r.sat.cadenaOriginal,
    noCertificadoSAT: r.sat.noCertificadoSAT,
    noCertificadoCFDI: r.sat.noCertificadoCFDI,
    uuid: r.uuid,
    selloSAT: r.sat.selloSAT,
    selloCFDI: r.sat.selloCFD,
    fechaTimbrado: r.fechaTimbrado,
    qrCode,
    cfdi: enc(r.stampedXml),
  };
}

/** Reads the multipart part named `xml` (SW's only input), at most 4 MiB. */
function readXmlPart(req: Request): Promise<string> {
  return new Promise((resolve, reject) => {
    let parser;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 2, fields: 4, fileSize: 4 << 20, fieldSize: 4 << 20 } });
    } catch (error) {
      reject(error instanceof Error ? error : new Error('not multipart'));
      return;
    }
    let xml: string | undefined;
    const take = (name: string, value: string) => {
      if (name === 'xml' && xml === undefined) xml = value;
    };
    parser.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => take(name, Buffer.concat(chunks).toString('utf8')));
    });
    parser.on('field', (name, value) => take(name, value));
    parser.on('error', (error) => reject(error instanceof Error ? error : new Error('bad multipart')));
    parser.on('close', () => (xml === undefined ? reject(new Error('no part named xml')) : resolve(xml)));
    req.pipe(parser);
  });
}
