import { Router, type Request, type Response } from 'express';
import { escapeXml } from '@timbra/cfdi-core';
import { DESCARGA_SERVICE_PATHS } from '@timbra/cfdi-node';
import type { DescargaMasiva, Verification } from '../descarga/descarga-masiva.ts';
import { OPERATIONS, type Operation } from '../descarga/queries.ts';
import { DescargaRefusal, NS, operationOf, parseEnvelope } from '../descarga/ws-security.ts';

/** The paths of the SAT's four Descarga Masiva services (after their hosts): the client's own. */
const DESCARGA_PATHS = DESCARGA_SERVICE_PATHS;

const envelope = (body: string, header = '') =>
  `<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="${NS.soap}" xmlns:u="${NS.wsu}">` +
  `<s:Header>${header}</s:Header><s:Body>${body}</s:Body></s:Envelope>`;

const MESSAGES: Record<string, string> = { '5000': 'Solicitud Aceptada' };
const status = (code: string, message: string) =>
  `CodEstatus="${escapeXml(code)}" Mensaje="${escapeXml(MESSAGES[code] ?? message)}"`;

function send(res: Response, xml: string, httpStatus = 200) {
  res.status(httpStatus).type('text/xml; charset=utf-8').send(xml);
}

/** What the SAT answers a request that fails authentication: a SOAP fault. */
function fault(res: Response) {
  send(
    res,
    envelope(
      `<s:Fault><faultcode xmlns:a="${NS.wsse}">a:InvalidSecurity</faultcode>` +
        '<faultstring xml:lang="en-US">An error occurred when verifying security for the message.</faultstring></s:Fault>',
    ),
    500,
  );
}

/** The refusal's code and message, or rethrows what is not a refusal. */
function refusal(error: unknown): DescargaRefusal {
  if (error instanceof DescargaRefusal) return error;
  throw error;
}

function verificationResult(v: Verification): string {
  const attrs = `${status('5000', '')} EstadoSolicitud="${v.estado}" CodigoEstadoSolicitud="${v.codigo}" NumeroCFDIs="${v.count}"`;
  const ids = v.packages.map((id) => `<IdsPaquetes>${id}</IdsPaquetes>`).join('');
  return `<VerificaSolicitudDescargaResult ${attrs}>${ids}</VerificaSolicitudDescargaResult>`;
}

/** The SAT's Descarga Masiva services (SOAP 1.1), answered by `descarga`. */
export function descargaRoutes(deps: { descarga: DescargaMasiva; now: () => Date }): Router {
  const router = Router();
  const { descarga } = deps;
  const body = (req: Request) => String(req.body ?? '');

  router.post(DESCARGA_PATHS.authenticate, (req, res) => {
    let token;
    try {
      token = descarga.authenticate(body(req), deps.now());
    } catch (error) {
      refusal(error);
      fault(res);
      return;
    }
    const header =
      `<o:Security xmlns:o="${NS.wsse}" s:mustUnderstand="1"><u:Timestamp u:Id="_0">` +
      `<u:Created>${token.created.toISOString()}</u:Created><u:Expires>${token.expires.toISOString()}</u:Expires>` +
      '</u:Timestamp></o:Security>';
    send(
      res,
      envelope(
        `<AutenticaResponse xmlns="${NS.auth}"><AutenticaResult>${token.token}</AutenticaResult></AutenticaResponse>`,
        header,
      ),
    );
  });

  router.post(DESCARGA_PATHS.query, (req, res) => {
    let operation: Operation = 'SolicitaDescargaEmitidos';
    let result: string;
    try {
      const local = operationOf(parseEnvelope(body(req))).localName as Operation;
      if (!OPERATIONS.includes(local)) throw new DescargaRefusal('301', 'XML Mal Formado');
      operation = local;
      const { id } = descarga.query(operation, body(req), req.get('authorization'), deps.now());
      result = `IdSolicitud="${id}" ${status('5000', '')}`;
    } catch (error) {
      const r = refusal(error);
      result = status(r.code, r.message);
    }
    send(
      res,
      envelope(`<${operation}Response xmlns="${NS.des}"><${operation}Result ${result}/></${operation}Response>`),
    );
  });

  router.post(DESCARGA_PATHS.verify, async (req, res, next) => {
    let result: string;
    try {
      result = verificationResult(await descarga.verify(body(req), req.get('authorization'), deps.now()));
    } catch (error) {
      if (!(error instanceof DescargaRefusal)) return next(error);
      result = `<VerificaSolicitudDescargaResult ${status(error.code, error.message)}/>`;
    }
    send(
      res,
      envelope(`<VerificaSolicitudDescargaResponse xmlns="${NS.des}">${result}</VerificaSolicitudDescargaResponse>`),
    );
  });

  router.post(DESCARGA_PATHS.download, (req, res) => {
    let header: string;
    let paquete = '';
    try {
      paquete = descarga.download(body(req), req.get('authorization'), deps.now()).toString('base64');
      header = status('5000', '');
    } catch (error) {
      const r = refusal(error);
      header = status(r.code, r.message);
    }
    send(
      res,
      envelope(
        `<RespuestaDescargaMasivaTercerosSalida xmlns="${NS.des}"><Paquete>${paquete}</Paquete></RespuestaDescargaMasivaTercerosSalida>`,
        `<h:respuesta xmlns:h="${NS.des}" ${header}/>`,
      ),
    );
  });
  return router;
}
