import { C_MONEDA } from '../validate/sat-catalogs.ts';
import type { ConceptoRequest, InvoiceRequest } from '../validate/request-schema.ts';
import { Dec, decimalsOf, fixed, sum, ZERO } from './money.ts';

/** A traslado as written in the XML: all amounts already formatted. */
export interface TrasladoAmounts {
  base: string;
  impuesto: string;
  tipoFactor: string;
  /** Absent for Exento. */
  tasaOCuota?: string;
  /** Absent for Exento. */
  importe?: string;
}

export interface RetencionAmounts {
  base: string;
  impuesto: string;
  tipoFactor: string;
  tasaOCuota: string;
  importe: string;
}

export interface ConceptoAmounts {
  source: ConceptoRequest;
  cantidad: string;
  valorUnitario: string;
  importe: string;
  descuento?: string;
  traslados: TrasladoAmounts[];
  retenciones: RetencionAmounts[];
}

/** Comprobante-level Impuestos: traslados grouped by impuesto+TipoFactor+tasa, retenciones by impuesto. */
export interface ImpuestosAmounts {
  traslados: TrasladoAmounts[];
  retenciones: { impuesto: string; importe: string }[];
  totalImpuestosTrasladados?: string;
  totalImpuestosRetenidos?: string;
}

export interface ComprobanteAmounts {
  conceptos: ConceptoAmounts[];
  subTotal: string;
  descuento?: string;
  total: string;
  impuestos?: ImpuestosAmounts;
}

/** Decimals amounts take in a currency (c_Moneda; 2 when unknown) — for the builder and the SAT rules alike. */
export function currencyDecimals(moneda: string): number {
  return Object.hasOwn(C_MONEDA, moneda) ? (C_MONEDA[moneda]?.decimals ?? 2) : 2;
}

/**
 * Computes every amount of an Ingreso/Egreso from its conceptos with decimal arithmetic.
 *
 * Rounding: each concepto's Importe, Base and tax importes are rounded half up to the concepto's
 * decimals — the currency's, or 6 when its ValorUnitario has more decimals than the currency (Anexo
 * 20 allows up to 6 at concepto level, so a Total can match the money received to the cent). Anexo 20
 * checks them against limits computed from the unrounded product and truncated / rounded up to the
 * decimals of the written value, so a half-up rounding to those decimals is always inside the
 * limits. Comprobante totals (SubTotal, the Impuestos summary) are the sums of the concepto values,
 * rounded to the currency's decimals at the end; Total is computed from those rounded totals, as
 * the SAT recomputes it.
 */
export function computeAmounts(request: InvoiceRequest): ComprobanteAmounts {
  const decimals = currencyDecimals(request.moneda);
  const conceptos = (request.conceptos ?? []).map((c) => computeConcepto(c, decimals));

  const subTotal = sum(conceptos.map((c) => new Dec(c.importe)));
  const withDescuento = conceptos.filter((c) => c.descuento !== undefined);
  const descuento = sum(withDescuento.map((c) => new Dec(c.descuento ?? 0)));

  const trasladoGroups = new Map<string, { t: TrasladoAmounts; base: Dec; importe: Dec }>();
  const retencionGroups = new Map<string, Dec>();
  for (const c of conceptos) {
    for (const t of c.traslados) {
      const key = `${t.impuesto}|${t.tipoFactor}|${t.tasaOCuota ?? ''}`;
      const g = trasladoGroups.get(key) ?? { t, base: ZERO, importe: ZERO };
      g.base = g.base.plus(t.base);
      g.importe = g.importe.plus(t.importe ?? 0);
      trasladoGroups.set(key, g);
    }
    for (const r of c.retenciones) {
      retencionGroups.set(r.impuesto, (retencionGroups.get(r.impuesto) ?? ZERO).plus(r.importe));
    }
  }

  const traslados: TrasladoAmounts[] = [...trasladoGroups.values()].map(({ t, base, importe }) =>
    t.tipoFactor === 'Exento'
      ? { base: fixed(base, decimals), impuesto: t.impuesto, tipoFactor: t.tipoFactor }
      : {
          base: fixed(base, decimals),
          impuesto: t.impuesto,
          tipoFactor: t.tipoFactor,
          ...(t.tasaOCuota !== undefined ? { tasaOCuota: t.tasaOCuota } : {}),
          importe: fixed(importe, decimals),
        },
  );
  // Sorted by impuesto so the node order never depends on the order of the conceptos.
  const retenciones = [...retencionGroups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([impuesto, importe]) => ({ impuesto, importe: fixed(importe, decimals) }));

  const taxed = traslados.filter((t) => t.tipoFactor !== 'Exento');
  const totalTrasladados = sum(taxed.map((t) => new Dec(t.importe ?? 0)));
  const totalRetenidos = sum(retenciones.map((r) => new Dec(r.importe)));
  const total = new Dec(fixed(subTotal, decimals))
    .minus(fixed(descuento, decimals))
    .plus(totalTrasladados)
    .minus(totalRetenidos);

  const hasImpuestos = traslados.length > 0 || retenciones.length > 0;
  return {
    conceptos,
    subTotal: fixed(subTotal, decimals),
    ...(withDescuento.length > 0 ? { descuento: fixed(descuento, decimals) } : {}),
    total: fixed(total, decimals),
    ...(hasImpuestos
      ? {
          impuestos: {
            traslados,
            retenciones,
            // Only present when some traslado is Tasa/Cuota (Exento alone has no importe to total).
            ...(taxed.length > 0 ? { totalImpuestosTrasladados: fixed(totalTrasladados, decimals) } : {}),
            ...(retenciones.length > 0 ? { totalImpuestosRetenidos: fixed(totalRetenidos, decimals) } : {}),
          },
        }
      : {}),
  };
}

export function computeConcepto(c: ConceptoRequest, currencyDecimals: number): ConceptoAmounts {
  // A ValorUnitario finer than the currency computes its concepto at 6 decimals (Anexo 20's maximum).
  const decimals = decimalsOf(c.valorUnitario) > currencyDecimals ? 6 : currencyDecimals;
  const cantidad = new Dec(c.cantidad);
  const valorUnitario = new Dec(c.valorUnitario);
  const importe = new Dec(fixed(cantidad.times(valorUnitario), decimals));
  const descuento = c.descuento !== undefined ? new Dec(fixed(new Dec(c.descuento), decimals)) : undefined;
  const base = importe.minus(descuento ?? ZERO);
  const baseText = fixed(base, decimals);

  // IVA is charged on the price with IEPS included (Ley del IVA, art. 18): a concepto with an IEPS
  // Tasa has its IVA's Base = Base + the IEPS importe.
  const ieps =
    c.objetoImp === '02' ? c.traslados.find((t) => t.impuesto === '003' && t.tipoFactor === 'Tasa') : undefined;
  const iepsImporte = ieps?.tasaOCuota !== undefined ? new Dec(fixed(base.times(ieps.tasaOCuota), decimals)) : ZERO;
  const baseOf = (impuesto: string) => (impuesto === '002' ? base.plus(iepsImporte) : base);
  const traslados: TrasladoAmounts[] =
    c.objetoImp === '02'
      ? c.traslados.map((t) =>
          t.tipoFactor === 'Exento' || t.tasaOCuota === undefined
            ? { base: fixed(baseOf(t.impuesto), decimals), impuesto: t.impuesto, tipoFactor: t.tipoFactor }
            : {
                base: fixed(baseOf(t.impuesto), decimals),
                impuesto: t.impuesto,
                tipoFactor: t.tipoFactor,
                tasaOCuota: t.tasaOCuota,
                importe: fixed(baseOf(t.impuesto).times(t.tasaOCuota), decimals),
              },
        )
      : [];
  const retenciones: RetencionAmounts[] =
    c.objetoImp === '02'
      ? c.retenciones.map((r) => ({
          base: baseText,
          impuesto: r.impuesto,
          tipoFactor: r.tipoFactor,
          tasaOCuota: r.tasaOCuota,
          importe: fixed(base.times(r.tasaOCuota), decimals),
        }))
      : [];

  return {
    source: c,
    cantidad: fixed(cantidad, Math.min(6, decimalsOf(c.cantidad))),
    valorUnitario: fixed(valorUnitario, Math.max(currencyDecimals, decimalsOf(c.valorUnitario))),
    importe: fixed(importe, decimals),
    ...(descuento !== undefined ? { descuento: fixed(descuento, decimals) } : {}),
    traslados,
    retenciones,
  };
}
