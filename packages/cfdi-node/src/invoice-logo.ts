/** The merchant's logo for the PDF: read from the file the operator names, or checked as uploaded. */
import { readFileSync } from 'node:fs';

/**
 * The merchant's logo for the PDF (INVOICE_LOGO_FILE): a PNG or JPEG of at most 1 MB, read once at
 * start-up. @returns the bytes, or the problem (for the configuration's list).
 */
export function readInvoiceLogo(path: string): { logo: Buffer } | { problem: string } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    return { problem: `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  const problem = invoiceLogoProblem(bytes);
  return problem ? { problem: `${path} ${problem}` } : { logo: bytes };
}

/** What is wrong with `bytes` as the PDF's logo (not a PNG or JPEG, over 1 MB); undefined when nothing. */
export function invoiceLogoProblem(bytes: Buffer): string | undefined {
  const png = bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const jpeg = bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  if (!png && !jpeg) return 'is not a PNG or JPEG image';
  if (bytes.length > MAX_LOGO_BYTES) return 'is over 1 MB: every PDF embeds it';
  return undefined;
}

/** The largest logo a PDF embeds. */
export const MAX_LOGO_BYTES = 1024 * 1024;
