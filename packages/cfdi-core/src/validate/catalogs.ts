/**
 * The SAT catálogos (Anexo 20, catCFDI) that the documents Timbra issues need. Only the codes are
 * checked here; descriptions are kept for error messages and docs. Source: catCFDI as published by
 * the SAT for CFDI 4.0 (revisions up to 2024).
 */

/** c_FormaPago. */
export const FORMA_PAGO: Readonly<Record<string, string>> = {
  '01': 'Efectivo',
  '02': 'Cheque nominativo',
  '03': 'Transferencia electrónica de fondos',
  '04': 'Tarjeta de crédito',
  '05': 'Monedero electrónico',
  '06': 'Dinero electrónico',
  '08': 'Vales de despensa',
  '12': 'Dación en pago',
  '13': 'Pago por subrogación',
  '14': 'Pago por consignación',
  '15': 'Condonación',
  '17': 'Compensación',
  '23': 'Novación',
  '24': 'Confusión',
  '25': 'Remisión de deuda',
  '26': 'Prescripción o caducidad',
  '27': 'A satisfacción del acreedor',
  '28': 'Tarjeta de débito',
  '29': 'Tarjeta de servicios',
  '30': 'Aplicación de anticipos',
  '31': 'Intermediario pagos',
  '99': 'Por definir',
};

/** c_MetodoPago. */
export const METODO_PAGO: Readonly<Record<string, string>> = {
  PUE: 'Pago en una sola exhibición',
  PPD: 'Pago en parcialidades o diferido',
};

/** c_UsoCFDI. */
export const USO_CFDI: Readonly<Record<string, string>> = {
  G01: 'Adquisición de mercancías',
  G02: 'Devoluciones, descuentos o bonificaciones',
  G03: 'Gastos en general',
  I01: 'Construcciones',
  I02: 'Mobiliario y equipo de oficina por inversiones',
  I03: 'Equipo de transporte',
  I04: 'Equipo de computo y accesorios',
  I05: 'Dados, troqueles, moldes, matrices y herramental',
  I06: 'Comunicaciones telefónicas',
  I07: 'Comunicaciones satelitales',
  I08: 'Otra maquinaria y equipo',
  D01: 'Honorarios médicos, dentales y gastos hospitalarios',
  D02: 'Gastos médicos por incapacidad o discapacidad',
  D03: 'Gastos funerales',
  D04: 'Donativos',
  D05: 'Intereses reales efectivamente pagados por créditos hipotecarios (casa habitación)',
  D06: 'Aportaciones voluntarias al SAR',
  D07: 'Primas por seguros de gastos médicos',
  D08: 'Gastos de transportación escolar obligatoria',
  D09: 'Depósitos en cuentas para el ahorro, primas que tengan como base planes de pensiones',
  D10: 'Pagos por servicios educativos (colegiaturas)',
  S01: 'Sin efectos fiscales',
  CP01: 'Pagos',
  CN01: 'Nómina',
};

/** Which kind of taxpayer a régimen applies to (persona física, moral, or both). */
export type PersonaTipo = 'fisica' | 'moral';

/** c_RegimenFiscal, with the kinds of persona each régimen applies to. */
export const REGIMEN_FISCAL: Readonly<Record<string, { name: string; applies: readonly PersonaTipo[] }>> = {
  '601': { name: 'General de Ley Personas Morales', applies: ['moral'] },
  '603': { name: 'Personas Morales con Fines no Lucrativos', applies: ['moral'] },
  '605': { name: 'Sueldos y Salarios e Ingresos Asimilados a Salarios', applies: ['fisica'] },
  '606': { name: 'Arrendamiento', applies: ['fisica'] },
  '607': { name: 'Régimen de Enajenación o Adquisición de Bienes', applies: ['fisica'] },
  '608': { name: 'Demás ingresos', applies: ['fisica'] },
  '610': { name: 'Residentes en el Extranjero sin Establecimiento Permanente en México', applies: ['fisica', 'moral'] },
  '611': { name: 'Ingresos por Dividendos (socios y accionistas)', applies: ['fisica'] },
  '612': { name: 'Personas Físicas con Actividades Empresariales y Profesionales', applies: ['fisica'] },
  '614': { name: 'Ingresos por intereses', applies: ['fisica'] },
  '615': { name: 'Régimen de los ingresos por obtención de premios', applies: ['fisica'] },
  '616': { name: 'Sin obligaciones fiscales', applies: ['fisica'] },
  '620': { name: 'Sociedades Cooperativas de Producción que optan por diferir sus ingresos', applies: ['moral'] },
  '621': { name: 'Incorporación Fiscal', applies: ['fisica'] },
  '622': { name: 'Actividades Agrícolas, Ganaderas, Silvícolas y Pesqueras', applies: ['moral'] },
  '623': { name: 'Opcional para Grupos de Sociedades', applies: ['moral'] },
  '624': { name: 'Coordinados', applies: ['moral'] },
  '625': { name: 'Actividades Empresariales con ingresos a través de Plataformas Tecnológicas', applies: ['fisica'] },
  '626': { name: 'Régimen Simplificado de Confianza', applies: ['fisica', 'moral'] },
};

/** c_ObjetoImp. */
export const OBJETO_IMP: Readonly<Record<string, string>> = {
  '01': 'No objeto de impuesto',
  '02': 'Sí objeto de impuesto',
  '03': 'Sí objeto del impuesto y no obligado al desglose',
  '04': 'Sí objeto del impuesto y no causa impuesto',
  '05': 'Sí objeto del impuesto, IVA crédito PODEBI',
  '06': 'Sí objeto del IVA, No traslado IVA',
  '07': 'No traslado del IVA, Sí desglose IEPS',
  '08': 'No traslado del IVA, No desglose IEPS',
};

/** c_Impuesto. */
export const IMPUESTO: Readonly<Record<string, string>> = {
  '001': 'ISR',
  '002': 'IVA',
  '003': 'IEPS',
};

/** c_TipoFactor. */
export const TIPO_FACTOR: Readonly<Record<string, string>> = {
  Tasa: 'Tasa',
  Cuota: 'Cuota',
  Exento: 'Exento',
};

/** c_TipoRelacion. */
export const TIPO_RELACION: Readonly<Record<string, string>> = {
  '01': 'Nota de crédito de los documentos relacionados',
  '02': 'Nota de débito de los documentos relacionados',
  '03': 'Devolución de mercancía sobre facturas o traslados previos',
  '04': 'Sustitución de los CFDI previos',
  '05': 'Traslados de mercancías facturados previamente',
  '06': 'Factura generada por los traslados previos',
  '07': 'CFDI por aplicación de anticipo',
};

/** c_Exportacion. */
export const EXPORTACION: Readonly<Record<string, string>> = {
  '01': 'No aplica',
  '02': 'Definitiva con clave A1',
  '03': 'Temporal',
  '04': 'Definitiva con clave distinta a A1 o cuando no existe enajenación en términos del CFF',
};

/** c_Periodicidad (InformacionGlobal). */
export const PERIODICIDAD: Readonly<Record<string, string>> = {
  '01': 'Diario',
  '02': 'Semanal',
  '03': 'Quincenal',
  '04': 'Mensual',
  '05': 'Bimestral',
};

/** c_Meses (InformacionGlobal): 01–12 months, 13–18 bimesters. */
export const MESES: Readonly<Record<string, string>> = Object.fromEntries(
  Array.from({ length: 18 }, (_, i) => [String(i + 1).padStart(2, '0'), String(i + 1)]),
);

/**
 * c_Moneda: the currencies Timbra accepts, with the number of decimals the SAT allows for amounts in
 * each (ISO 4217 minor units). `XXX` is the "no currency" code used by the Pago comprobante.
 */
export const MONEDA: Readonly<Record<string, { decimals: number }>> = {
  MXN: { decimals: 2 },
  USD: { decimals: 2 },
  EUR: { decimals: 2 },
  CAD: { decimals: 2 },
  GBP: { decimals: 2 },
  CHF: { decimals: 2 },
  CNY: { decimals: 2 },
  BRL: { decimals: 2 },
  ARS: { decimals: 2 },
  COP: { decimals: 2 },
  CLP: { decimals: 0 },
  JPY: { decimals: 0 },
  KRW: { decimals: 0 },
  XXX: { decimals: 0 },
};

/**
 * Tax rates a traslado may use, per impuesto and TipoFactor (c_TasaOCuota, fixed values only).
 * IEPS has many fixed rates and cuotas; the fixed Tasa values are listed, Cuota is a range.
 */
// prettier-ignore
export const TASA_TRASLADO: Readonly<Record<string, readonly string[]>> = {
  '002|Tasa': ['0.160000', '0.080000', '0.000000'],
  '003|Tasa': [
    '0.265000', '0.300000', '0.530000', '0.500000', '1.600000', '0.304000', '0.250000', '0.090000',
    '0.080000', '0.070000', '0.060000', '0.030000', '0.000000',
  ],
};

/** Upper bounds of retention rates (c_TasaOCuota ranges for retenciones). */
export const TASA_RETENCION_MAX: Readonly<Record<string, string>> = {
  '001': '0.350000',
  '002': '0.160000',
  '003': '0.530000',
};
