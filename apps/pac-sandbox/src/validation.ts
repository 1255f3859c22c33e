/**
 * What makes the sandbox reject like a real PAC: the SAT's XSD (CFDI 4.0, Pagos 2.0, TFD 1.1, with
 * catCFDI.xsd rendered from the SAT catalogues) and the SAT rule engine of @timbra/cfdi-core, with a
 * list of registered taxpayers (L_RFC) for the receptor checks. Both can be switched off per instance
 * (admin API `POST /__admin/validation`) for tests that need a document a real PAC would refuse.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import libxmljs from 'libxmljs2';
import {
  SCHEMA_WRAPPER,
  checkSatRules,
  SAT_TEST_TAXPAYERS,
  type RuleViolation,
  type Taxpayer,
  type XmlElement,
} from '@timbra/cfdi-core';
import { schemaFiles } from '@timbra/cfdi-node';
import { z } from 'zod';

export interface ValidationSwitches {
  /** Validate against the SAT's schemas (code 301 on failure). */
  xsd: boolean;
  /** Run the SAT rules (codes CFDI40xxx / CRP20xxx). */
  rules: boolean;
}

export const VALIDATION_ON: ValidationSwitches = { xsd: true, rules: true };
export const VALIDATION_OFF: ValidationSwitches = { xsd: false, rules: false };

export const validationSchema = z.object({ xsd: z.boolean(), rules: z.boolean() }).strict();

/**
 * The SAT schemas for libxml2 (native). libxml2 reads a schema's imports when it validates, so they
 * are copied, with the rendered catCFDI.xsd, into a private temporary folder that lives as long as
 * the process (the SAT folder stays read-only).
 */
export class SchemaCheck {
  private readonly schema: libxmljs.Document;

  constructor(satDir: string) {
    const dir = mkdtempSync(join(tmpdir(), 'timbra-xsd-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    for (const { fileName, contents } of schemaFiles(satDir)) {
      mkdirSync(dirname(join(dir, fileName)), { recursive: true });
      writeFileSync(join(dir, fileName), contents);
    }
    this.schema = libxmljs.parseXml(SCHEMA_WRAPPER, { baseUrl: join(dir, 'all.xsd') });
  }

  /** The schema errors of a document (empty: valid). */
  errors(xml: string): string[] {
    let doc: libxmljs.Document;
    try {
      doc = libxmljs.parseXml(xml);
    } catch (error) {
      return [`XML mal formado: ${(error as Error).message}`];
    }
    if (doc.validate(this.schema)) return [];
    return doc.validationErrors.map((e) => e.message.trim());
  }
}

/** The sandbox's list of registered taxpayers (the SAT's L_RFC), seeded with the SAT's test RFCs. */
export class TaxpayerList {
  private readonly byRfc = new Map<string, Taxpayer>();

  constructor() {
    this.reset();
  }

  get(rfc: string): Taxpayer | undefined {
    return this.byRfc.get(rfc.toUpperCase());
  }

  all(): Taxpayer[] {
    return [...this.byRfc.values()];
  }

  put(taxpayer: Taxpayer): void {
    this.byRfc.set(taxpayer.rfc.toUpperCase(), { ...taxpayer, rfc: taxpayer.rfc.toUpperCase() });
  }

  delete(rfc: string): boolean {
    return this.byRfc.delete(rfc.toUpperCase());
  }

  reset(): void {
    this.byRfc.clear();
    for (const t of SAT_TEST_TAXPAYERS) this.put(t);
  }
}

export const taxpayerSchema = z
  .object({
    name: z.string().min(1).max(300),
    postalCode: z.string().regex(/^[0-9]{5}$/),
    regimenes: z.array(z.string().regex(/^[0-9]{3}$/)).min(1),
    status: z.enum(['active', 'cancelled']).default('active'),
  })
  .strict();

/** A rejection as the PAC answers it: the first problem's code and the SAT's text, with where. */
export interface Rejection {
  code: string;
  message: string;
}

/**
 * What a real PAC would refuse in this document, undefined when it passes what `switches` turn on.
 * The SAT's rules first, so a document gets the specific code the matrix names (a FormaPago out of
 * c_FormaPago is CFDI40104, not a schema error), then the schema for everything else (301).
 */
export function pacValidation(
  xml: string,
  root: XmlElement,
  switches: ValidationSwitches,
  schema: SchemaCheck | undefined,
  taxpayers: TaxpayerList,
  now: Date,
): Rejection | undefined {
  if (switches.rules) {
    const [first]: RuleViolation[] = checkSatRules(root, { taxpayer: (rfc) => taxpayers.get(rfc), now });
    if (first) return { code: first.rule, message: `${first.es} (${first.path})` };
  }
  if (switches.xsd && schema) {
    const errors = schema.errors(xml);
    if (errors.length > 0)
      return { code: '301', message: `La estructura del comprobante es incorrecta. ${errors.slice(0, 3).join(' ')}` };
  }
  return undefined;
}
