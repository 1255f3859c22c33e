/** The Receptor (CFDI40143–40161): RFC, name, domicilio fiscal, foreign residence, régimen, UsoCFDI. */
import { RFC_PUBLICO_GENERAL } from '../../validate/rfc.ts';
import { C_PAIS, C_REGIMEN_FISCAL, C_USO_CFDI } from '../../validate/sat-catalogs.ts';
import { usoCfdiAllowed } from '../../validate/uso-cfdi.ts';
import { normalizeSpace } from '../../validate/text.ts';
import { a, at, receptor, tipoOf } from '../nodes.ts';
import { NOMBRE_PUBLICO_GENERAL, has, R, personaOf, isGeneric, foreignOnly } from './helpers.ts';
import type { SatRule } from '../rule.ts';

export const RECEPTOR_RULES: readonly SatRule[] = [
  {
    // The matrix has no code of its own for an RFC of no shape; a PAC answers that it is not listed.
    code: 'CFDI40143',
    node: 'Receptor/@Rfc',
    es: 'Este RFC del receptor no existe en la lista de RFC inscritos no cancelados del SAT.',
    en: 'The receptor’s Rfc has neither the shape of a persona física’s nor of a moral’s RFC.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && personaOf(a(r, 'Rfc')) === null) report(at(r, 'Rfc'));
    },
  },
  {
    code: 'CFDI40143',
    node: 'Receptor/@Rfc',
    es: 'Este RFC del receptor no existe en la lista de RFC inscritos no cancelados del SAT.',
    en: 'The receptor’s RFC is not in the SAT’s list of registered, not cancelled taxpayers (L_RFC).',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      if (!ctx.taxpayer || !r || isGeneric(rfc)) return;
      if (ctx.taxpayer(rfc ?? '')?.status !== 'active') report(at(r, 'Rfc'));
    },
  },
  {
    code: 'CFDI40145',
    node: 'Receptor/@Nombre',
    es: 'El campo Nombre del receptor debe pertenecer al nombre asociado al RFC registrado en el campo Rfc del receptor.',
    en: 'The receptor’s Nombre is not the name registered for its RFC.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      const t = isGeneric(rfc) ? undefined : ctx.taxpayer?.(rfc ?? '');
      if (r && t && a(r, 'Nombre') !== t.name) report(at(r, 'Nombre'), `registered: ${t.name}`);
    },
  },
  {
    code: 'CFDI40146',
    node: 'Receptor/@Nombre',
    es: 'El campo RFC del receptor debe contener el valor "XAXX010101000" (Nombre PUBLICO EN GENERAL).',
    en: 'PUBLICO EN GENERAL is only the name of RFC XAXX010101000.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (
        r &&
        a(r, 'Rfc') !== RFC_PUBLICO_GENERAL &&
        normalizeSpace(a(r, 'Nombre') ?? '').toUpperCase() === NOMBRE_PUBLICO_GENERAL
      )
        report(at(r, 'Nombre'));
    },
  },
  {
    code: 'CFDI40147',
    node: 'Receptor/@DomicilioFiscalReceptor',
    es: 'El campo DomicilioFiscalReceptor del receptor, debe encontrarse en la lista de RFC inscritos no cancelados en el SAT.',
    en: 'The receptor’s DomicilioFiscalReceptor is not the postal code registered for its RFC.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      const t = isGeneric(rfc) ? undefined : ctx.taxpayer?.(rfc ?? '');
      if (r && t && a(r, 'DomicilioFiscalReceptor') !== t.postalCode)
        report(at(r, 'DomicilioFiscalReceptor'), `registered: ${t.postalCode}`);
    },
  },
  {
    // A postal code outside c_CodigoPostal is no taxpayer's: PACs answer CFDI40147 for it.
    code: 'CFDI40147',
    node: 'Receptor/@DomicilioFiscalReceptor',
    es: 'El campo DomicilioFiscalReceptor del receptor, debe encontrarse en la lista de RFC inscritos no cancelados en el SAT.',
    en: 'DomicilioFiscalReceptor is not a c_CodigoPostal value (checked by shape unless the operator supplied the catalogue).',
    status: 'needs-sat-data',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const cp = a(r, 'DomicilioFiscalReceptor');
      if (r && (cp === undefined || !/^[0-9]{5}$/.test(cp) || (ctx.codigosPostales && !ctx.codigosPostales.has(cp))))
        report(at(r, 'DomicilioFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40149',
    node: 'Receptor/@DomicilioFiscalReceptor',
    es: 'Si el valor del campo Rfc del receptor es XAXX010101000 o XEXX010101000, DomicilioFiscalReceptor debe ser igual al valor del campo LugarExpedicion.',
    en: 'With a generic RFC (XAXX010101000, XEXX010101000), DomicilioFiscalReceptor must equal LugarExpedicion.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && isGeneric(a(r, 'Rfc')) && a(r, 'DomicilioFiscalReceptor') !== a(R(doc), 'LugarExpedicion'))
        report(at(r, 'DomicilioFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40150',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'El campo ResidenciaFiscal, no contiene un valor del catálogo c_Pais.',
    en: 'ResidenciaFiscal is not a c_Pais value.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const pais = a(r, 'ResidenciaFiscal');
      if (r && pais !== undefined && !C_PAIS.has(pais)) report(at(r, 'ResidenciaFiscal'));
    },
  },
  {
    code: 'CFDI40151',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'Si el RFC del receptor es de un RFC registrado en el SAT o un RFC genérico nacional, el campo ResidenciaFiscal no debe existir.',
    en: 'ResidenciaFiscal applies only to a foreign receptor (XEXX010101000).',
    status: 'enforced',
    check: (doc, report) => foreignOnly(doc, 'ResidenciaFiscal', report),
  },
  {
    code: 'CFDI40152',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'El valor del campo ResidenciaFiscal no puede ser MEX.',
    en: 'ResidenciaFiscal never names MEX.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && a(r, 'ResidenciaFiscal') === 'MEX') report(at(r, 'ResidenciaFiscal'));
    },
  },
  {
    code: 'CFDI40153',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'Se debe registrar un valor del catálogo c_Pais en el campo ResidenciaFiscal cuando en el campo NumRegIdTrib se registre información.',
    en: 'A receptor with NumRegIdTrib must say its ResidenciaFiscal.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && a(r, 'NumRegIdTrib') !== undefined && a(r, 'ResidenciaFiscal') === undefined)
        report(at(r, 'NumRegIdTrib'));
    },
  },
  {
    code: 'CFDI40154',
    node: 'Receptor/@NumRegIdTrib',
    es: 'Si el RFC del receptor es de un RFC registrado en el SAT o un RFC genérico nacional, el campo NumRegIdTrib no debe existir.',
    en: 'NumRegIdTrib applies only to a foreign receptor (XEXX010101000).',
    status: 'enforced',
    check: (doc, report) => foreignOnly(doc, 'NumRegIdTrib', report),
  },
  {
    code: 'CFDI40157',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'El campo RegimenFiscalReceptor no contiene un valor del catálogo c_RegimenFiscal.',
    en: 'RegimenFiscalReceptor is not a c_RegimenFiscal value.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && !has(C_REGIMEN_FISCAL, a(r, 'RegimenFiscalReceptor'))) report(at(r, 'RegimenFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40158',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'La clave del campo RegimenFiscalReceptor debe corresponder con el tipo de persona (física o moral).',
    en: 'RegimenFiscalReceptor does not apply to the receptor’s kind of persona (física/moral).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const kind = personaOf(a(r, 'Rfc'));
      const regimen = C_REGIMEN_FISCAL[a(r, 'RegimenFiscalReceptor') ?? ''];
      if (r && regimen && (kind === 'fisica' || kind === 'moral') && !regimen[kind])
        report(at(r, 'RegimenFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40159',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'La clave del campo RegimenFiscalR debe corresponder con el RFC del receptor (un régimen en el que está inscrito).',
    en: 'RegimenFiscalReceptor is not a régimen the receptor is registered in.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      const t = isGeneric(rfc) ? undefined : ctx.taxpayer?.(rfc ?? '');
      if (r && t && !t.regimenes.includes(a(r, 'RegimenFiscalReceptor') ?? ''))
        report(at(r, 'RegimenFiscalReceptor'), `registered: ${t.regimenes.join(', ')}`);
    },
  },
  {
    code: 'CFDI40159',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'Si el atributo Rfc del Receptor contiene el valor “XAXX010101000” o el valor “XEXX010101000”, se debe registrar la clave “616” en RegimenFiscalR.',
    en: 'With a generic RFC, RegimenFiscalReceptor must be 616 (sin obligaciones fiscales).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && isGeneric(a(r, 'Rfc')) && a(r, 'RegimenFiscalReceptor') !== '616')
        report(at(r, 'RegimenFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40161',
    node: 'Receptor/@UsoCFDI',
    es: 'La clave del campo UsoCFDI debe corresponder con el tipo de persona (física o moral) y el régimen correspondiente conforme al catálogo c_UsoCFDI.',
    en: 'UsoCFDI does not apply to the receptor’s kind of persona and RegimenFiscalReceptor (c_UsoCFDI).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const kind = personaOf(a(r, 'Rfc'));
      const uso = a(r, 'UsoCFDI') ?? '';
      if (!r || !(kind === 'fisica' || kind === 'moral') || !has(C_USO_CFDI, uso)) return;
      if (!usoCfdiAllowed(uso, a(r, 'RegimenFiscalReceptor') ?? '', kind)) report(at(r, 'UsoCFDI'));
    },
  },
  {
    // c_UsoCFDI allows only S01 and CP01 to régimen 616, the generic RFCs' one.
    code: 'CFDI40161',
    node: 'Receptor/@UsoCFDI',
    es: 'La clave del campo UsoCFDI debe corresponder con el tipo de persona (física o moral) y el régimen correspondiente conforme al catálogo c_UsoCFDI.',
    en: 'With a generic RFC, UsoCFDI must be S01 (CP01 on a Pago).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && isGeneric(a(r, 'Rfc')) && a(r, 'UsoCFDI') !== (tipoOf(doc) === 'P' ? 'CP01' : 'S01'))
        report(at(r, 'UsoCFDI'));
    },
  },
  {
    code: 'CFDI40160',
    node: 'Receptor/@UsoCFDI',
    es: 'El campo UsoCFDI, no contiene un valor del catálogo c_UsoCFDI (CP01 solo en un comprobante de pago).',
    en: 'UsoCFDI is not a c_UsoCFDI value; CP01 is for a Pago and a Pago must use CP01.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const uso = a(r, 'UsoCFDI');
      if (r && (!has(C_USO_CFDI, uso) || (tipoOf(doc) === 'P') !== (uso === 'CP01'))) report(at(r, 'UsoCFDI'));
    },
  },
];
