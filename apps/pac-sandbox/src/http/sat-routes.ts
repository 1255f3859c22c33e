import { Router } from 'express';
import { escapeXml, findElement, soapBody, textOf } from '@timbra/cfdi-core';
import { statusOf, type CancellationPolicy } from '../cancellation.ts';
import type { SatRegistry } from '../registry.ts';

const RESULT_NS = 'http://schemas.datacontract.org/2004/07/Sat.Cfdi.Negocio.ConsultaCfdi.Servicio';

/** The SAT's ConsultaCFDIService (SOAP 1.1 `Consulta`), answered from the sandbox's registry. */
export function satRoutes(deps: { registry: SatRegistry; policy: CancellationPolicy; now: () => Date }): Router {
  const router = Router();
  router.post('/ConsultaCFDIService.svc', (req, res) => {
    let expresion: string;
    try {
      expresion = textOf(findElement(soapBody(String(req.body ?? '')), 'expresionImpresa')).trim();
    } catch {
      res.status(400).type('text/plain').send('Invalid SOAP envelope');
      return;
    }
    // CFDI 3.3/4.0 expressions are the verification URL; older ones only its query (`?re=…`).
    const question = expresion.indexOf('?');
    const params = new URLSearchParams(question >= 0 ? expresion.slice(question + 1) : expresion);
    const status = statusOf(
      deps.registry,
      {
        uuid: params.get('id') ?? '',
        rfcEmisor: params.get('re') ?? '',
        rfcReceptor: params.get('rr') ?? '',
        total: params.get('tt') ?? '',
      },
      deps.now().getTime(),
      deps.policy,
    );
    const a = (name: string, value: string) => `<a:${name}>${escapeXml(value)}</a:${name}>`;
    res.type('text/xml; charset=utf-8').send(
      '<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>' +
        `<ConsultaResponse xmlns="http://tempuri.org/"><ConsultaResult xmlns:a="${RESULT_NS}">` +
        a('CodigoEstatus', status.codigoEstatus) +
        a('EsCancelable', status.esCancelable) +
        a('Estado', status.estado) +
        a('EstatusCancelacion', status.estatusCancelacion) +
        // 200: the emisor is not on the SAT's EFOS list (the sandbox has none); empty when not found.
        a('ValidacionEFOS', status.estado === 'No Encontrado' ? '' : '200') +
        '</ConsultaResult></ConsultaResponse></s:Body></s:Envelope>',
    );
  });
  return router;
}
