import { createPrivateKey, randomUUID, X509Certificate } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import {
  DEFAULT_TIME_ZONE,
  escapeXml,
  findElement,
  formatFecha,
  rfcOf,
  soapBody,
  textOf,
  type XmlElement,
} from '@timbra/cfdi-core';
import { acuseXml, requestCancellation, type CancellationPolicy } from '../cancellation.ts';
import type { PacInstance } from '../pac-instance.ts';
import type { SatRegistry, StampRecord } from '../registry.ts';
import { beforeProcessing, dropAfterProcessing } from './fault-middleware.ts';
import { APPS_NS, CANCEL_NS, cancelWsdl, STAMP_NS, stampWsdl } from './finkok-wsdl.ts';

export interface FinkokRoutesDeps {
  instance: PacInstance;
  registry: SatRegistry;
  credentials: { username: string; password: string };
  policy: CancellationPolicy;
  now: () => Date;
}

function soapResponse(res: Response, ns: string, operation: string, result: string): void {
  res
    .type('text/xml; charset=utf-8')
    .send(
      '<?xml version="1.0" encoding="UTF-8"?>' +
        `<senv:Envelope xmlns:senv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:tns="${ns}" xmlns:s0="${APPS_NS}">` +
        `<senv:Body><tns:${operation}Response><tns:${operation}Result>${result}</tns:${operation}Result></tns:${operation}Response></senv:Body></senv:Envelope>`,
    );
}

function soapFault(res: Response, message: string): void {
  res
    .status(500)
    .type('text/xml; charset=utf-8')
    .send(
      '<?xml version="1.0" encoding="UTF-8"?><senv:Envelope xmlns:senv="http://schemas.xmlsoap.org/soap/envelope/"><senv:Body><senv:Fault>' +
        `<faultcode>senv:Client</faultcode><faultstring>${escapeXml(message)}</faultstring></senv:Fault></senv:Body></senv:Envelope>`,
    );
}

const el = (name: string, text: string) => `<s0:${name}>${escapeXml(text)}</s0:${name}>`;

/** What an Incidencia says beyond its code and message (Finkok fills them from the request). */
interface IncidenciaContext {
  instance: PacInstance;
  now: Date;
  rfcEmisor?: string;
  uuid?: string;
}

/**
 * Incidencias as Finkok's WSDL orders an Incidencia: IdIncidencia, RfcEmisor, Uuid, CodigoError,
 * WorkProcessId, MensajeIncidencia, ExtraInfo, NoCertificadoPac, FechaRegistro (Mexico City time).
 */
function incidencias(code: string, message: string, ctx: IncidenciaContext): string {
  return (
    '<s0:Incidencias><s0:Incidencia>' +
    el('IdIncidencia', randomUUID()) +
    el('RfcEmisor', ctx.rfcEmisor ?? '') +
    el('Uuid', ctx.uuid ?? '') +
    el('CodigoError', code) +
    el('WorkProcessId', randomUUID()) +
    el('MensajeIncidencia', message) +
    el('ExtraInfo', '') +
    el('NoCertificadoPac', ctx.instance.noCertificadoPac) +
    el('FechaRegistro', formatFecha(ctx.now, DEFAULT_TIME_ZONE)) +
    '</s0:Incidencia></s0:Incidencias>'
  );
}

/** The emisor's RFC of a document, when it can be read (for an Incidencia). */
function emisorRfcOf(xml: string): string | undefined {
  return /<cfdi:Emisor\b[^>]*\bRfc="([^"]+)"/.exec(xml)?.[1];
}

/**
 * An AcuseRecepcionCFDI as Finkok's WSDL orders it: xml, UUID, faultstring, Fecha, CodEstatus,
 * faultcode, SatSeal, Incidencias, NoCertificadoSAT (the fault fields only on a fault).
 */
function stampedResult(record: StampRecord, codEstatus: string, extra = ''): string {
  const satSeal = /SelloSAT="([^"]*)"/.exec(record.tfdXml)?.[1] ?? '';
  const noCertificadoSat = /NoCertificadoSAT="([^"]*)"/.exec(record.tfdXml)?.[1] ?? '';
  return (
    el('xml', record.stampedXml) +
    el('UUID', record.uuid) +
    el('Fecha', record.fechaTimbrado) +
    el('CodEstatus', codEstatus) +
    el('SatSeal', satSeal) +
    (extra || '<s0:Incidencias/>') +
    el('NoCertificadoSAT', noCertificadoSat)
  );
}

/** Finkok SOAP 1.1: `stamp`, `quick_stamp`, `stamped` and `cancel`, errors as Incidencias. */
export function finkokRoutes(deps: FinkokRoutesDeps): Router {
  const router = Router();
  // The WSDLs, as Finkok serves them (`…/stamp.wsdl` and `…/stamp?wsdl`), pointing at this server.
  for (const [service, wsdl] of [
    ['stamp', stampWsdl],
    ['cancel', cancelWsdl],
  ] as const) {
    const send = (req: Request, res: Response) =>
      res.type('text/xml; charset=utf-8').send(wsdl(`${req.protocol}://${req.get('host')}/servicios/soap/${service}`));
    router.get(`/servicios/soap/${service}.wsdl`, send);
    router.get(`/servicios/soap/${service}`, (req, res) => {
      if (!Object.keys(req.query).some((k) => k.toLowerCase() === 'wsdl')) return void res.status(404).end();
      send(req, res);
    });
  }
  router.post('/servicios/soap/stamp', (req, res) => stamp(deps, req, res));
  router.post('/servicios/soap/cancel', (req, res) => cancel(deps, req, res));
  return router;
}

function authorized(deps: FinkokRoutesDeps, op: XmlElement): boolean {
  return (
    textOf(findElement(op, 'username')) === deps.credentials.username &&
    textOf(findElement(op, 'password')) === deps.credentials.password
  );
}

/** `stamp` and `quick_stamp` stamp; `stamped` answers what an earlier stamp of the same XML gave. */
async function stamp(deps: FinkokRoutesDeps, req: Request, res: Response): Promise<void> {
  const { instance } = deps;
  instance.counts.requests++;
  let op: XmlElement;
  try {
    op = soapBody(String(req.body ?? ''));
  } catch {
    return soapFault(res, 'Invalid SOAP envelope');
  }
  const operation = op.local;
  if (!['stamp', 'quick_stamp', 'stamped'].includes(operation)) return soapFault(res, `Unknown operation ${operation}`);
  const ctx = { instance, now: deps.now() };
  if (!authorized(deps, op))
    return soapResponse(res, STAMP_NS, operation, incidencias('300', 'Usuario o contraseña inválidos', ctx));
  const xml = Buffer.from(textOf(findElement(op, 'xml')), 'base64').toString('utf8');
  const about = { ...ctx, ...(emisorRfcOf(xml) ? { rfcEmisor: emisorRfcOf(xml)! } : {}) };

  if (operation === 'stamped') {
    const previous = instance.previousStamp(xml);
    if (previous === undefined)
      return soapResponse(res, STAMP_NS, operation, incidencias('603', 'El CFDI no contiene un timbre previo', about));
    if ('code' in previous)
      return soapResponse(res, STAMP_NS, operation, incidencias(previous.code, previous.message, about));
    return soapResponse(res, STAMP_NS, operation, stampedResult(previous, 'Comprobante timbrado previamente'));
  }

  if (!(await beforeProcessing(instance, res))) return;
  const outcome = await instance.stamp(xml, undefined, 'finkok');
  if (outcome.kind !== 'rejected' && dropAfterProcessing(instance, res)) return;
  if (outcome.kind === 'rejected')
    return soapResponse(res, STAMP_NS, operation, incidencias(outcome.code, outcome.message, about));
  if (outcome.kind === 'previous') {
    const incidencia = incidencias('307', 'Comprobante timbrado previamente', {
      ...about,
      uuid: outcome.record.uuid,
    });
    // Finkok may answer 307 without the previous XML; the client then asks `stamped`.
    const result = instance.faults.finkok307WithXml
      ? stampedResult(outcome.record, 'Comprobante timbrado previamente', incidencia)
      : incidencia;
    return soapResponse(res, STAMP_NS, operation, result);
  }
  soapResponse(res, STAMP_NS, operation, stampedResult(outcome.record, 'Comprobante timbrado satisfactoriamente'));
}

/** `cancel`: the certificate and key in the request prove the taxpayer. */
function cancel(deps: FinkokRoutesDeps, req: Request, res: Response): void {
  const { instance } = deps;
  let op: XmlElement;
  try {
    op = soapBody(String(req.body ?? ''));
  } catch {
    return soapFault(res, 'Invalid SOAP envelope');
  }
  if (op.local !== 'cancel') return soapFault(res, `Unknown operation ${op.local}`);
  const result = (body: string) => soapResponse(res, CANCEL_NS, 'cancel', body);
  if (!authorized(deps, op)) return result(el('CodEstatus', '300 - Usuario o contraseña inválidos'));
  const taxpayer = textOf(findElement(op, 'taxpayer_id'));
  let certRfc: string;
  try {
    const cert = new X509Certificate(Buffer.from(textOf(findElement(op, 'cer')), 'base64'));
    const key = createPrivateKey({
      key: Buffer.from(textOf(findElement(op, 'key')), 'base64').toString('utf8'),
      passphrase: deps.credentials.password,
    });
    if (!cert.checkPrivateKey(key)) throw new Error('key does not match');
    certRfc = rfcOf(cert);
  } catch {
    return result(el('CodEstatus', '702 - Certificado o llave inválidos'));
  }
  if (certRfc !== taxpayer) return result(el('CodEstatus', '702 - El RFC no corresponde al certificado'));
  const folio = findElement(op, 'UUID');
  const uuid = (folio?.attrs.find(([k]) => k === 'UUID')?.[1] ?? '').toUpperCase();
  const motivo = folio?.attrs.find(([k]) => k === 'Motivo')?.[1] ?? '';
  const folioSustitucion = folio?.attrs.find(([k]) => k === 'FolioSustitucion')?.[1] ?? '';
  const outcome = requestCancellation(
    deps.registry,
    { uuid, rfcEmisor: taxpayer, motivo, ...(folioSustitucion ? { folioSustitucion } : {}) },
    deps.now().getTime(),
    deps.policy,
    instance.faults.rejectCancellationBy,
  );
  if ('error' in outcome) return result(el('CodEstatus', outcome.error));
  if (dropAfterProcessing(instance, res)) return;
  result(
    `<s0:Folios><s0:Folio>${el('EstatusUUID', outcome.code)}${el('UUID', uuid)}${el('EstatusCancelacion', '')}</s0:Folio></s0:Folios>` +
      el('Acuse', acuseXml(taxpayer, uuid, outcome.code, deps.now())) +
      el('Fecha', formatFecha(deps.now(), DEFAULT_TIME_ZONE)) +
      el('RfcEmisor', taxpayer),
  );
}
