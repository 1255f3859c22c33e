/** Field schemas the creating requests share: ids, stored text, amounts. */
import { z } from 'zod';
import { isBlank, parseAmount } from '@timbra/cfdi-core';
import { isStorableText, metadataProblems, type Metadata } from '@timbra/db';

/** An id of the caller's: printable ASCII, no spaces. */
export const printable = (max: number) =>
  z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), `1–${max} printable ASCII characters`);

/** Text a column can store (no U+0000, no lone surrogate: Postgres refuses both). */
export const storableText = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .refine(isStorableText, 'no NUL character or lone surrogate')
    // Only NBSP, zero-width or other invisible characters would print blank: refused like empty.
    .refine((v) => !isBlank(v), 'has no visible character (only spaces or invisible ones)');

/** The money grammar (cfdi-core parseAmount), as a string; the payment's currency narrows the decimals. */
export const amountSchema = z.string().superRefine((a, ctx) => {
  const parsed = parseAmount(a, 'MXN');
  if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.problem.message });
});

/**
 * The merchant's own strings (`metadata`), checked by @timbra/db's rules: at most 50 keys of 1–40
 * characters (no square brackets), values up to 500; a value "" removes its key.
 */
export const metadataSchema = z.unknown().transform((m, ctx): Metadata => {
  for (const p of metadataProblems(m, 'metadata'))
    ctx.addIssue({
      code: 'custom',
      path: p.path === 'metadata' ? [] : [p.path.slice('metadata.'.length)],
      message: p.message,
    });
  return m as Metadata;
});

/** The body of a metadata change: `{ "metadata": { … } }`. */
export const metadataChangeSchema = z.object({ metadata: metadataSchema }).strict();
