/**
 * The customer's copy of a stamped CFDI: its XML and its representación impresa (PDF), named
 * `<serie>-<folio>-<UUID>.xml|.pdf`, alone or in one ZIP. The API's downloads and the worker's email
 * both take it from here, so the files a customer receives are the same everywhere.
 */
import { zipSync } from 'fflate';
import { renderCfdiPdf, type PdfOptions } from './pdf.ts';
import { printableCfdi, type PrintableCfdi } from './printable.ts';

export interface StampedDocument {
  serie: string;
  folio: number | string;
  uuid: string;
  stampedXml: string;
  cancelled: boolean;
}

/** `<serie>-<folio>-<UUID>.<ext>`, the name every copy of the document carries. */
export function documentFileName(doc: Pick<StampedDocument, 'serie' | 'folio' | 'uuid'>, ext: 'xml' | 'pdf' | 'zip') {
  return `${doc.serie}-${doc.folio}-${doc.uuid}.${ext}`;
}

export interface CustomerCopy {
  printable: PrintableCfdi;
  xml: { filename: string; content: Buffer };
  pdf: { filename: string; content: Buffer };
}

/** The XML (the stamped bytes, as stamped) and the PDF ("CANCELADO" across it once cancelled). */
export async function customerCopy(
  doc: StampedDocument,
  options: Omit<PdfOptions, 'cancelled'>,
): Promise<CustomerCopy> {
  const printable = printableCfdi(doc.stampedXml);
  const pdf = await renderCfdiPdf(printable, { ...options, cancelled: doc.cancelled });
  return {
    printable,
    xml: { filename: documentFileName(doc, 'xml'), content: Buffer.from(doc.stampedXml, 'utf8') },
    pdf: { filename: documentFileName(doc, 'pdf'), content: pdf },
  };
}

/**
 * Both files in one ZIP (deflated), deterministic like the PDF: every entry dated the FechaTimbrado,
 * so the same document gives the same bytes.
 */
export function customerCopyZip(copy: CustomerCopy): Buffer {
  const stampedAt = new Date(`${copy.printable.timbre.fechaTimbrado}Z`);
  const mtime = Number.isNaN(stampedAt.getTime()) ? new Date('2022-01-01T00:00:00Z') : stampedAt;
  return Buffer.from(
    zipSync(
      {
        [copy.xml.filename]: [new Uint8Array(copy.xml.content), { mtime, level: 6 }],
        [copy.pdf.filename]: [new Uint8Array(copy.pdf.content), { mtime, level: 6 }],
      },
      { mtime },
    ),
  );
}
