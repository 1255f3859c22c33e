/**
 * The WSDLs of the sandbox's Finkok endpoints, equivalent to Finkok's for what the sandbox speaks
 * (`stamp`, `quick_stamp`, `stamped`; `cancel`): SOAP 1.1, document/literal, the operations' elements
 * in the service's namespace and the results' types in `apps.services.soap.core.views`, each
 * sequence in Finkok's order — so a client generated from Finkok's WSDL (PHP SoapClient, Python
 * zeep, Node `soap`, Java and .NET proxies) can be pointed at the sandbox. Served at
 * `/servicios/soap/stamp.wsdl` and `?wsdl` (and the same for cancel), with the sandbox's own address.
 */
import { escapeXml } from '@timbra/cfdi-core';

export const STAMP_NS = 'http://facturacion.finkok.com/stamp';
export const CANCEL_NS = 'http://facturacion.finkok.com/cancel';
export const APPS_NS = 'apps.services.soap.core.views';

const strings = (names: readonly string[]) =>
  names.map((n) => `<xs:element name="${n}" type="xs:string" minOccurs="0" nillable="true"/>`).join('');

/** The result types both services share (apps.services.soap.core.views). */
function appsSchema(extra: string): string {
  return (
    `<xs:schema targetNamespace="${APPS_NS}" elementFormDefault="qualified">` +
    `<xs:complexType name="Incidencia"><xs:sequence>${strings([
      'IdIncidencia',
      'RfcEmisor',
      'Uuid',
      'CodigoError',
      'WorkProcessId',
      'MensajeIncidencia',
      'ExtraInfo',
      'NoCertificadoPac',
      'FechaRegistro',
    ])}</xs:sequence></xs:complexType>` +
    `<xs:complexType name="IncidenciaArray"><xs:sequence><xs:element name="Incidencia" type="s0:Incidencia" minOccurs="0" maxOccurs="unbounded" nillable="true"/></xs:sequence></xs:complexType>` +
    extra +
    '</xs:schema>'
  );
}

/** An operation's request and response elements: `fields` in, `result` (of `type`) out. */
function operation(name: string, fields: string, type: string): string {
  return (
    `<xs:element name="${name}"><xs:complexType><xs:sequence>${fields}</xs:sequence></xs:complexType></xs:element>` +
    `<xs:element name="${name}Response"><xs:complexType><xs:sequence>` +
    `<xs:element name="${name}Result" type="${type}" minOccurs="0" nillable="true"/>` +
    '</xs:sequence></xs:complexType></xs:element>'
  );
}

function definitions(
  ns: string,
  service: string,
  location: string,
  schemas: string,
  operations: readonly string[],
): string {
  const messages = operations
    .map(
      (op) =>
        `<wsdl:message name="${op}"><wsdl:part name="${op}" element="tns:${op}"/></wsdl:message>` +
        `<wsdl:message name="${op}Response"><wsdl:part name="${op}Response" element="tns:${op}Response"/></wsdl:message>`,
    )
    .join('');
  const portOps = operations
    .map(
      (op) =>
        `<wsdl:operation name="${op}" parameterOrder="${op}"><wsdl:input name="${op}" message="tns:${op}"/>` +
        `<wsdl:output name="${op}Response" message="tns:${op}Response"/></wsdl:operation>`,
    )
    .join('');
  const bindingOps = operations
    .map(
      (op) =>
        `<wsdl:operation name="${op}"><soap:operation soapAction="${op}" style="document"/>` +
        `<wsdl:input name="${op}"><soap:body use="literal"/></wsdl:input>` +
        `<wsdl:output name="${op}Response"><soap:body use="literal"/></wsdl:output></wsdl:operation>`,
    )
    .join('');
  return (
    '<?xml version="1.0" encoding="UTF-8"?>' +
    '<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"' +
    ` xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:tns="${ns}" xmlns:s0="${APPS_NS}" targetNamespace="${ns}" name="Application">` +
    `<wsdl:types>${schemas}</wsdl:types>` +
    messages +
    `<wsdl:portType name="Application">${portOps}</wsdl:portType>` +
    '<wsdl:binding name="Application" type="tns:Application">' +
    '<soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>' +
    `${bindingOps}</wsdl:binding>` +
    `<wsdl:service name="${service}"><wsdl:port name="Application" binding="tns:Application">` +
    `<soap:address location="${escapeXml(location)}"/></wsdl:port></wsdl:service>` +
    '</wsdl:definitions>'
  );
}

/** The stamp service's WSDL, its endpoint at `location`. */
export function stampWsdl(location: string): string {
  const acuse =
    '<xs:complexType name="AcuseRecepcionCFDI"><xs:sequence>' +
    strings(['xml', 'UUID', 'faultstring', 'Fecha', 'CodEstatus', 'faultcode', 'SatSeal']) +
    '<xs:element name="Incidencias" type="s0:IncidenciaArray" minOccurs="0" nillable="true"/>' +
    strings(['NoCertificadoSAT']) +
    '</xs:sequence></xs:complexType>';
  const request =
    '<xs:element name="xml" type="xs:base64Binary" minOccurs="0" nillable="true"/>' + strings(['username', 'password']);
  const tns =
    `<xs:schema targetNamespace="${STAMP_NS}" elementFormDefault="qualified"><xs:import namespace="${APPS_NS}"/>` +
    ['stamp', 'quick_stamp', 'stamped'].map((op) => operation(op, request, 's0:AcuseRecepcionCFDI')).join('') +
    '</xs:schema>';
  return definitions(STAMP_NS, 'StampSOAP', location, appsSchema(acuse) + tns, ['stamp', 'quick_stamp', 'stamped']);
}

/** The cancel service's WSDL, its endpoint at `location`. */
export function cancelWsdl(location: string): string {
  const types =
    '<xs:complexType name="UUID"><xs:attribute name="UUID" type="xs:string"/>' +
    '<xs:attribute name="FolioSustitucion" type="xs:string"/><xs:attribute name="Motivo" type="xs:string"/></xs:complexType>' +
    '<xs:complexType name="UUIDArray"><xs:sequence><xs:element name="UUID" type="s0:UUID" minOccurs="0" maxOccurs="unbounded" nillable="true"/></xs:sequence></xs:complexType>' +
    `<xs:complexType name="Folio"><xs:sequence>${strings(['EstatusUUID', 'UUID', 'EstatusCancelacion'])}</xs:sequence></xs:complexType>` +
    '<xs:complexType name="FolioArray"><xs:sequence><xs:element name="Folio" type="s0:Folio" minOccurs="0" maxOccurs="unbounded" nillable="true"/></xs:sequence></xs:complexType>' +
    '<xs:complexType name="CancelaCFDResult"><xs:sequence>' +
    '<xs:element name="Folios" type="s0:FolioArray" minOccurs="0" nillable="true"/>' +
    strings(['Acuse', 'Fecha', 'RfcEmisor', 'CodEstatus']) +
    '</xs:sequence></xs:complexType>';
  const request =
    '<xs:element name="UUIDS" type="s0:UUIDArray" minOccurs="0" nillable="true"/>' +
    strings(['username', 'password', 'taxpayer_id']) +
    '<xs:element name="cer" type="xs:base64Binary" minOccurs="0" nillable="true"/>' +
    '<xs:element name="key" type="xs:base64Binary" minOccurs="0" nillable="true"/>' +
    '<xs:element name="store_pending" type="xs:boolean" minOccurs="0" nillable="true"/>';
  const tns =
    `<xs:schema targetNamespace="${CANCEL_NS}" elementFormDefault="qualified"><xs:import namespace="${APPS_NS}"/>` +
    operation('cancel', request, 's0:CancelaCFDResult') +
    '</xs:schema>';
  return definitions(CANCEL_NS, 'CancelSOAP', location, appsSchema(types) + tns, ['cancel']);
}
