import type { Taxpayer } from './rules/rule.ts';
/**
 * The SAT's test taxpayers, whose CSDs the SAT publishes for testing (the repository's sat/csd): a
 * CFDI sealed with one is never valid. Apps use them only under an explicit sandbox profile
 * (`TIMBRA_PROFILE=sandbox`), and refuse them in production.
 */
export const SAT_TEST_RFCS: readonly string[] = ['EKU9003173C9', 'CACX7605101P8'];

/**
 * The SAT's test taxpayers as the PAC sandbox's list of registered taxpayers (L_RFC) starts: names and
 * postal codes as the SAT's test environment has them, with the régimenes the tests, the demo and the
 * chaos run invoice them in. Editable at run time through the sandbox's admin API.
 */
export const SAT_TEST_TAXPAYERS: readonly Taxpayer[] = [
  { rfc: 'EKU9003173C9', name: 'ESCUELA KEMPER URGATE', postalCode: '42501', regimenes: ['601'], status: 'active' },
  {
    rfc: 'CACX7605101P8',
    name: 'XOCHILT CASAS CHAVEZ',
    postalCode: '36257',
    regimenes: ['605', '606', '612'],
    status: 'active',
  },
  {
    rfc: 'URE180429TM6',
    name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
    postalCode: '86991',
    regimenes: ['601'],
    status: 'active',
  },
  { rfc: 'FUNK671228PH6', name: 'KARLA FUENTE NOLASCO', postalCode: '01160', regimenes: ['612'], status: 'active' },
  { rfc: 'XIA190128J61', name: 'XENON INDUSTRIAL ARTICLES', postalCode: '76343', regimenes: ['601'], status: 'active' },
];

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
    VAULT_KEYS?: string | undefined;
  },
  required: readonly string[] = ['EMISOR_RFC'],
): string[] {
  const hint = '(TIMBRA_PROFILE=production; for a local try-out with the SAT test CSD, set TIMBRA_PROFILE=sandbox)';
  const values = c as Record<string, string | undefined>;
  const problems = required.filter((name) => !values[name]).map((name) => `  ${name}: required ${hint}`);
  // With the vault's keys the CSD may be one stored in the database (csd:upload): checked at start.
  const filesRequired = !c.VAULT_KEYS;
  if (filesRequired && (!c.CSD_CER_PATH || !c.CSD_KEY_PATH))
    problems.push(
      `  CSD_CER_PATH, CSD_KEY_PATH: the emisor's CSD is required (or VAULT_KEYS and a stored CSD) ${hint}`,
    );
  if (filesRequired && !c.CSD_PASSWORD && !c.CSD_PASSWORD_FILE)
    problems.push(`  CSD_PASSWORD or CSD_PASSWORD_FILE: required ${hint}`);
  if (c.EMISOR_RFC && SAT_TEST_RFCS.includes(c.EMISOR_RFC.toUpperCase()))
    problems.push(`  EMISOR_RFC: ${c.EMISOR_RFC} is a SAT test RFC: its CFDIs are never valid ${hint}`);
  return problems;
}
