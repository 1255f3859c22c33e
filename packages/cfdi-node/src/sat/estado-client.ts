/**
 * The transport `@nodecfdi/sat-estado-cfdi` asks its user for (its `ConsumerClientInterface`): one
 * SOAP `Consulta` to the SAT's ConsultaCFDIService, every field of its `ConsultaResult` handed back
 * by name. The library's `Consumer` turns them into its statuses (document, cancellable,
 * cancellation, EFOS).
 */
import { Consumer, ConsumerClientResponse } from '@nodecfdi/sat-estado-cfdi';
import { escapeXml, findElement, soapBody, type XmlElement } from '@timbra/cfdi-core';
import { DEFAULT_TIMEOUTS, PacHttp, type PacTimeouts } from '../pac/http.ts';

const SOAP_ACTION = 'http://tempuri.org/IConsultaCFDIService/Consulta';

export class EstadoCfdiClient {
  private readonly clients = new Map<string, PacHttp>();

  constructor(private readonly timeouts: PacTimeouts = DEFAULT_TIMEOUTS) {}

  async consume(uri: string, expression: string): Promise<ConsumerClientResponse> {
    let client = this.clients.get(uri);
    if (!client) {
      client = new PacHttp(uri, this.timeouts);
      this.clients.set(uri, client);
    }
    const body =
      '<?xml version="1.0" encoding="UTF-8"?>' +
      '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:tem="http://tempuri.org/">' +
      `<soapenv:Body><tem:Consulta><tem:expresionImpresa>${escapeXml(expression)}</tem:expresionImpresa></tem:Consulta></soapenv:Body></soapenv:Envelope>`;
    const answer = await client.post('', {
      body,
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: SOAP_ACTION },
    });
    if (answer.statusCode !== 200) throw new Error(`ConsultaCFDIService answered HTTP ${answer.statusCode}`);
    const result = findElement(soapBody(answer.body), 'ConsultaResult');
    if (!result) throw new Error('ConsultaCFDIService answered without a ConsultaResult');
    const fields: Record<string, string> = {};
    for (const child of result.children) {
      if (child.kind === 'element') fields[child.local] = textOfElement(child);
    }
    const response = new ConsumerClientResponse();
    response.set(fields);
    return response;
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

function textOfElement(element: XmlElement): string {
  return element.children.map((c) => (c.kind === 'text' ? c.text : '')).join('');
}

/** The library's consumer of the status service at `url`, over `client`. */
export function estadoConsumer(url: string, client = new EstadoCfdiClient()): Consumer {
  return new Consumer(client, url);
}
