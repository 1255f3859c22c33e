import { failureError, networkFailure, PacHttp, type PacTimeouts, DEFAULT_TIMEOUTS } from './http.ts';
import { escapeXml, findElement, soapBody, textOf, type StatusRequest, type StatusResult } from '@timbra/cfdi-core';

const SOAP_ACTION = 'http://tempuri.org/IConsultaCFDIService/Consulta';

/**
 * The SAT's public CFDI status service (ConsultaCFDIService, SOAP 1.1): Vigente / Cancelado / No
 * Encontrado, whether it can be cancelled, and the state of a pending cancellation. PACs answer
 * status questions from this same service, so both PAC clients use it.
 */
export class SatStatusClient {
  private readonly http: PacHttp;

  constructor(
    url: string,
    private readonly name = 'sat',
    timeouts: PacTimeouts = DEFAULT_TIMEOUTS,
  ) {
    this.http = new PacHttp(url, timeouts);
  }

  /** @throws PacError classified like any PAC failure. */
  async status(request: StatusRequest): Promise<StatusResult> {
    const expresion = `?re=${request.rfcEmisor}&rr=${request.rfcReceptor}&tt=${request.total}&id=${request.uuid}`;
    const body =
      '<?xml version="1.0" encoding="UTF-8"?>' +
      '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:tem="http://tempuri.org/">' +
      `<soapenv:Header/><soapenv:Body><tem:Consulta><tem:expresionImpresa>${escapeXml(expresion)}</tem:expresionImpresa></tem:Consulta></soapenv:Body></soapenv:Envelope>`;
    let response;
    try {
      response = await this.http.post('', {
        body,
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: SOAP_ACTION },
      });
    } catch (error) {
      throw failureError(this.name, networkFailure(error), 'status request failed');
    }
    if (response.statusCode !== 200) {
      throw failureError(this.name, { type: 'http', status: response.statusCode }, 'status request refused');
    }
    let result;
    try {
      result = findElement(soapBody(response.body), 'ConsultaResult');
    } catch {
      result = undefined;
    }
    if (!result)
      throw failureError(this.name, { type: 'unreadable', status: response.statusCode }, 'unreadable status answer');
    return {
      codigoEstatus: textOf(findElement(result, 'CodigoEstatus')),
      esCancelable: textOf(findElement(result, 'EsCancelable')),
      estado: textOf(findElement(result, 'Estado')),
      estatusCancelacion: textOf(findElement(result, 'EstatusCancelacion')),
    };
  }
}
