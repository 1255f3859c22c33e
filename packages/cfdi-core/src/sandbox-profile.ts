/**
 * The SAT's test taxpayers, whose CSDs the SAT publishes for testing (the repository's sat/csd): a
 * CFDI sealed with one is never valid. Apps use them only under an explicit sandbox profile
 * (`TIMBRA_PROFILE=sandbox`), and refuse them in production.
 */
export const SAT_TEST_RFCS: readonly string[] = ['EKU9003173C9', 'CACX7605101P8'];

/** The emisor of the sandbox profile: the SAT's test persona moral. */
export const SANDBOX_EMISOR = {
  EMISOR_RFC: 'EKU9003173C9',
  EMISOR_NOMBRE: 'ESCUELA KEMPER URGATE',
  EMISOR_REGIMEN_FISCAL: '601',
  EMISOR_LUGAR_EXPEDICION: '42501',
} as const;

/** What a production configuration lacks or gets wrong about the emisor and its CSD (empty when fine). */
export function productionEmisorProblems(
  c: {
    EMISOR_RFC?: string | undefined;
    CSD_CER_PATH?: string | undefined;
    CSD_KEY_PATH?: string | undefined;
    CSD_PASSWORD?: string | undefined;
    CSD_PASSWORD_FILE?: string | undefined;
  },
  required: readonly string[] = ['EMISOR_RFC'],
): string[] {
  const hint = '(TIMBRA_PROFILE=production; for a local try-out with the SAT test CSD, set TIMBRA_PROFILE=sandbox)';
  const values = c as Record<string, string | undefined>;
  const problems = required.filter((name) => !values[name]).map((name) => `  ${name}: required ${hint}`);
  if (!c.CSD_CER_PATH || !c.CSD_KEY_PATH)
    problems.push(`  CSD_CER_PATH, CSD_KEY_PATH: the emisor's CSD is required ${hint}`);
  if (!c.CSD_PASSWORD && !c.CSD_PASSWORD_FILE) problems.push(`  CSD_PASSWORD or CSD_PASSWORD_FILE: required ${hint}`);
  if (c.EMISOR_RFC && SAT_TEST_RFCS.includes(c.EMISOR_RFC.toUpperCase()))
    problems.push(`  EMISOR_RFC: ${c.EMISOR_RFC} is a SAT test RFC: its CFDIs are never valid ${hint}`);
  return problems;
}
