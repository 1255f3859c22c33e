/**
 * What an organization sets for itself in platform mode (`emisores.settings`, migration
 * 20261228000000): its series, its público en general mode and periodicidad, its concepto, its email
 * sender, its brand colour (and its logo, a column of its own: migration 20261229000000). Each field
 * it leaves out takes the deployment's setting (SERIE_*, PUBLICO_GENERAL_*, CONCEPTO_*), so an
 * organization that sets nothing invoices as the home organization does. This module owns the shape
 * and how the two combine; the SAT's rules on the result are cfdi-core's (fiscalSettingsProblems).
 */
import { z } from 'zod';
import type { PrismaClient } from '../generated/client.ts';

const PERIODICIDAD = z.enum(['01', '02', '03', '04', '05']);

/** WCAG's relative luminance of an sRGB `#RRGGBB`. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

/** How far `#RRGGBB` stands from white, as WCAG measures contrast (1 to 21). */
export function contrastWithWhite(hex: string): number {
  return 1.05 / (luminance(hex) + 0.05);
}

/**
 * A merchant's brand colour (INVOICE_COLOR, an organization's `branding.color`): `#RRGGBB`, dark
 * enough that white text on it reads (WCAG AA, contrast ≥ 4.5:1) — /facturar's header and buttons
 * and the emails' heading are white on it, the PDF's headings are it on white.
 */
export const BRAND_COLOR = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, 'a colour as #RRGGBB')
  .refine((hex) => contrastWithWhite(hex) >= 4.5, {
    message: 'too light: white text on it must have a contrast of at least 4.5:1 (WCAG AA)',
  })
  .transform((hex) => hex.toLowerCase());

/** What an organization may set (every field optional; `null` clears one back to the deployment's). */
export const ORGANIZATION_SETTINGS = z
  .object({
    series: z
      .object({ ingreso: z.string().nullable(), egreso: z.string().nullable(), pago: z.string().nullable() })
      .partial()
      .strict(),
    publicoGeneral: z
      .object({ mode: z.enum(['per-payment', 'global']).nullable(), periodicidad: PERIODICIDAD.nullable() })
      .partial()
      .strict(),
    concepto: z
      .object({
        claveProdServ: z.string().nullable(),
        claveUnidad: z.string().nullable(),
        descripcion: z.string().min(1).max(1000).nullable(),
      })
      .partial()
      .strict(),
    /** Who the customers' emails come from (`Name <address>`), and where replies go. */
    email: z
      .object({
        from: z.string().min(3).max(254).regex(/@/, 'an email address').nullable(),
        replyTo: z.string().min(3).max(254).regex(/@/, 'an email address').nullable(),
      })
      .partial()
      .strict(),
    /** Its colour on its PDFs, emails and /facturar. */
    branding: z.object({ color: BRAND_COLOR.nullable() }).partial().strict(),
  })
  .partial()
  .strict();
export type OrganizationSettings = z.infer<typeof ORGANIZATION_SETTINGS>;

/** The settings an organization invoices with: its own, else the deployment's. */
export interface EffectiveSettings {
  series: { ingreso: string; egreso: string; pago: string };
  publicoGeneral: { mode: 'per-payment' | 'global'; periodicidad: string | undefined };
  concepto: { claveProdServ: string; claveUnidad: string; descripcion: string };
  /** The worker's EMAIL_FROM and EMAIL_REPLY_TO are the deployment's (the API knows neither). */
  email: { from?: string; replyTo?: string };
  /** INVOICE_COLOR (none: the documents' plain look). */
  branding: { color?: string };
}

type Section = keyof EffectiveSettings;

/** `changes` over `stored`, field by field; a `null` removes the field (the deployment's again). */
export function mergeSettings(stored: OrganizationSettings, changes: OrganizationSettings): OrganizationSettings {
  const merged: Record<string, Record<string, unknown>> = {};
  for (const section of ['series', 'publicoGeneral', 'concepto', 'email', 'branding'] as const) {
    const fields = { ...stored[section], ...changes[section] } as Record<string, unknown>;
    for (const [k, v] of Object.entries(fields)) if (v === null || v === undefined) delete fields[k];
    if (Object.keys(fields).length > 0) merged[section] = fields;
  }
  return merged;
}

/** One section of the organization's own settings over the deployment's (the worker's email sender). */
export function effectiveSection<S extends Section>(
  stored: OrganizationSettings,
  section: S,
  defaults: EffectiveSettings[S],
): EffectiveSettings[S] {
  const own = Object.fromEntries(Object.entries(stored[section] ?? {}).filter(([, v]) => v !== null));
  return { ...defaults, ...own };
}

/** The organization's own settings over the deployment's `defaults`. */
export function effectiveSettings(stored: OrganizationSettings, defaults: EffectiveSettings): EffectiveSettings {
  return {
    series: effectiveSection(stored, 'series', defaults.series),
    publicoGeneral: effectiveSection(stored, 'publicoGeneral', defaults.publicoGeneral),
    concepto: effectiveSection(stored, 'concepto', defaults.concepto),
    email: effectiveSection(stored, 'email', defaults.email),
    branding: effectiveSection(stored, 'branding', defaults.branding),
  };
}

/** The organization's own settings as stored ({} when it set none, or the session cannot see it). */
export async function organizationSettings(
  db: Pick<PrismaClient, 'emisor'>,
  organizationId: string,
): Promise<OrganizationSettings> {
  const row = await db.emisor.findUnique({ where: { id: organizationId }, select: { settings: true } });
  return ORGANIZATION_SETTINGS.parse(row?.settings ?? {});
}

/** The organization's own logo for its PDFs; undefined: the deployment's (INVOICE_LOGO_FILE). */
export async function organizationLogo(
  db: Pick<PrismaClient, 'emisor'>,
  organizationId: string,
): Promise<Buffer | undefined> {
  const row = await db.emisor.findUnique({ where: { id: organizationId }, select: { logo: true } });
  return row?.logo ? Buffer.from(row.logo) : undefined;
}

/**
 * What an organization invoices with of its own: its settings and logo — a test twin's, its live
 * organization's settings and its own logo else the live one's (the one rule the API's and the
 * worker's builds share). `clientOf` gives each organization's client.
 */
export async function ownInvoicing(
  clientOf: (organizationId: string) => Pick<PrismaClient, 'emisor'>,
  organizationId: string,
): Promise<{ settings: OrganizationSettings; logo: Buffer | undefined }> {
  const client = clientOf(organizationId);
  const row = await client.emisor.findUnique({ where: { id: organizationId }, select: { liveId: true } });
  const liveId = row?.liveId ?? undefined;
  const live = liveId ? clientOf(liveId) : undefined;
  return {
    settings: await organizationSettings(live ?? client, liveId ?? organizationId),
    logo:
      (await organizationLogo(client, organizationId)) ?? (live ? await organizationLogo(live, liveId!) : undefined),
  };
}

/** Stores (or, with null, removes) the organization's logo, checked by the caller (cfdi-node's invoiceLogoProblem). */
export async function saveOrganizationLogo(
  owner: Pick<PrismaClient, 'emisor'>,
  organizationId: string,
  logo: Buffer | null,
): Promise<void> {
  await owner.emisor.update({ where: { id: organizationId }, data: { logo: logo ? new Uint8Array(logo) : null } });
}

/** Stores the organization's settings (the owner's client: an organization's row is the owner's to write). */
export async function saveOrganizationSettings(
  owner: Pick<PrismaClient, 'emisor'>,
  organizationId: string,
  settings: OrganizationSettings,
): Promise<void> {
  await owner.emisor.update({ where: { id: organizationId }, data: { settings } });
}
