/**
 * catCFDI.xsd — the catálogo types cfdv40.xsd and Pagos20.xsd import — rendered from the SAT
 * catalogues Timbra carries (sat-catalogs.ts, generated from sat/catalogos). The SAT publishes it as
 * a multi-MiB file; this is the same enumerations for every catalogue we have, and the SAT's patterns
 * for the two we do not (c_ClaveProdServ, c_CodigoPostal: the operator may supply them to the rule
 * engine; here they are checked by shape). The PAC sandbox and the tests' XSD oracle validate with it.
 */
import {
  C_CLAVE_UNIDAD,
  C_EXPORTACION,
  C_FORMA_PAGO,
  C_IMPUESTO,
  C_MESES,
  C_METODO_PAGO,
  C_MONEDA,
  C_OBJETO_IMP,
  C_PAIS,
  C_PERIODICIDAD,
  C_REGIMEN_FISCAL,
  C_TIPO_DE_COMPROBANTE,
  C_TIPO_FACTOR,
  C_TIPO_RELACION,
  C_USO_CFDI,
} from './sat-catalogs.ts';

const escape = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function enumeration(name: string, values: Iterable<string>): string {
  const items = [...values].map((v) => `<xs:enumeration value="${escape(v)}"/>`).join('');
  return `  <xs:simpleType name="${name}"><xs:restriction base="xs:string">${items}</xs:restriction></xs:simpleType>`;
}

function pattern(name: string, re: string): string {
  return `  <xs:simpleType name="${name}"><xs:restriction base="xs:string"><xs:pattern value="${re}"/></xs:restriction></xs:simpleType>`;
}

let rendered: string | undefined;

/** The schema text (namespace http://www.sat.gob.mx/sitio_internet/cfd/catalogos). */
export function catalogSchema(): string {
  rendered ??= [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!-- Rendered by @timbra/cfdi-core from the SAT catalogues (sat/catalogos); do not edit. -->',
    '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="http://www.sat.gob.mx/sitio_internet/cfd/catalogos" elementFormDefault="qualified" attributeFormDefault="unqualified">',
    pattern('c_ClaveProdServ', '[0-9]{8}'),
    enumeration('c_ClaveUnidad', C_CLAVE_UNIDAD),
    pattern('c_CodigoPostal', '[0-9]{5}'),
    enumeration('c_Exportacion', Object.keys(C_EXPORTACION)),
    enumeration('c_FormaPago', Object.keys(C_FORMA_PAGO)),
    enumeration('c_Impuesto', Object.keys(C_IMPUESTO)),
    enumeration('c_Meses', Object.keys(C_MESES)),
    enumeration('c_MetodoPago', Object.keys(C_METODO_PAGO)),
    enumeration('c_Moneda', Object.keys(C_MONEDA)),
    enumeration('c_ObjetoImp', Object.keys(C_OBJETO_IMP)),
    enumeration('c_Pais', C_PAIS),
    enumeration('c_Periodicidad', Object.keys(C_PERIODICIDAD)),
    enumeration('c_RegimenFiscal', Object.keys(C_REGIMEN_FISCAL)),
    enumeration('c_TipoDeComprobante', Object.keys(C_TIPO_DE_COMPROBANTE)),
    enumeration('c_TipoFactor', C_TIPO_FACTOR),
    enumeration('c_TipoRelacion', Object.keys(C_TIPO_RELACION)),
    enumeration('c_UsoCFDI', Object.keys(C_USO_CFDI)),
    '</xs:schema>',
    '',
  ].join('\n');
  return rendered;
}

/** The SAT folders (under `sat/cfd`) whose XSDs a CFDI 4.0 with Pagos 2.0 and TFD 1.1 needs. */
export const SCHEMA_FOLDERS: readonly string[] = ['4', 'tipoDatos', 'Pagos', 'TimbreFiscalDigital', 'catalogos/Pagos'];

/**
 * A schema that imports CFDI 4.0, Pagos 2.0 and TFD 1.1 (paths relative to the SAT folder), so that
 * `xs:any` in Complemento is validated strictly: what to validate a CFDI against.
 */
export const SCHEMA_WRAPPER = `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:timbra:all" elementFormDefault="qualified">
  <xs:import namespace="http://www.sat.gob.mx/cfd/4" schemaLocation="cfd/4/cfdv40.xsd"/>
  <xs:import namespace="http://www.sat.gob.mx/Pagos20" schemaLocation="cfd/Pagos/Pagos20.xsd"/>
  <xs:import namespace="http://www.sat.gob.mx/TimbreFiscalDigital" schemaLocation="cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd"/>
</xs:schema>
`;
