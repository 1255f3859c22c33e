/**
 * The customer's copy by email: the stamped XML and its PDF, sent through SMTP (nodemailer) to the
 * payment's address when the invoice is stamped, and again (the PDF marked CANCELADO) when it is
 * cancelled. The Message-ID is the delivery's own (`<delivery id@domain>`), the same on every attempt,
 * so a message sent twice (a worker that died after the server took it) is recognisable as one.
 */
import nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';
import { amountInWords, customerCopy, stampedXmlOf, type CustomerCopy, type PdfOptions } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import type { ClaimedDelivery } from '@timbra/db/deliveries';
import { stampedDocumentOf } from '@timbra/db/invoices';
import type { SendResult } from './webhook.ts';

export interface EmailSettings {
  /** `smtp://user:password@host:587` (STARTTLS when offered) or `smtps://…:465`. */
  smtpUrl: string;
  /** `Name <address>`: the merchant's sending address. */
  from: string;
  replyTo?: string;
  timeoutMs: number;
  /** How the PDF is printed: its fonts and the merchant's logo and colour (the email's too). */
  pdf: Omit<PdfOptions, 'cancelled'>;
}

const KIND_NAMES: Record<string, string> = {
  I: 'Factura',
  E: 'Nota de crédito',
  P: 'Complemento de pago',
};

/** The domain of a From address, for Message-IDs. */
export function messageIdDomain(from: string): string {
  const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
  return address.split('@')[1]?.trim() || 'timbra.invalid';
}

/**
 * Subject and bodies (Spanish: the customer's language) of one message; with the merchant's colour
 * (`#RRGGBB`, dark enough for white text), the HTML opens with its name on a band of it.
 */
export function emailContent(copy: CustomerCopy, kind: string, cancelled: boolean, color?: string) {
  const p = copy.printable;
  // A Pago's Total is 0 XXX: what it documents is the payment, in the payment's currency.
  const pago = p.pagos[0];
  const amount = pago
    ? { total: pago.monto, moneda: pago.monedaP, words: amountInWords(pago.monto, pago.monedaP) }
    : { total: p.total, moneda: p.moneda, words: p.totalEnLetra };
  const what = pago ? `el pago de ${amount.total} ${amount.moneda}` : `${amount.total} ${amount.moneda}`;
  const name = `${KIND_NAMES[kind] ?? 'CFDI'} ${p.serie ?? ''}-${p.folio ?? ''}`;
  const subject = cancelled ? `Cancelación: ${name} de ${p.emisor.nombre}` : `${name} de ${p.emisor.nombre}`;
  const lines = cancelled
    ? [
        `Estimado(a) ${p.receptor.nombre}:`,
        '',
        `${p.emisor.nombre} (RFC ${p.emisor.rfc}) canceló ante el SAT el CFDI ${p.serie ?? ''}-${p.folio ?? ''}, folio fiscal ${p.timbre.uuid}, por ${what}.`,
        'Adjuntamos el XML y su representación impresa, marcada como cancelada.',
      ]
    : [
        `Estimado(a) ${p.receptor.nombre}:`,
        '',
        `Adjuntamos el CFDI ${p.serie ?? ''}-${p.folio ?? ''} que ${p.emisor.nombre} (RFC ${p.emisor.rfc}) emitió a su nombre (RFC ${p.receptor.rfc}):`,
        `folio fiscal ${p.timbre.uuid}, por ${what} (${amount.words}).`,
        'Encontrará el XML y su representación impresa (PDF) como archivos adjuntos.',
        '',
        `Puede verificarlo en el portal del SAT: https://verificacfdi.facturaelectronica.sat.gob.mx`,
      ];
  const text = `${lines.join('\n')}\n`;
  const band = color
    ? `<div style="background:${color};color:#ffffff;padding:12px 16px;font-weight:600">${escapeHtml(p.emisor.nombre)}</div>`
    : '';
  const html = `<!doctype html><html lang="es"><body>${band}${lines.map((l) => (l ? `<p>${escapeHtml(l)}</p>` : '')).join('')}</body></html>`;
  return { subject, text, html };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export type EmailSender = (delivery: ClaimedDelivery) => Promise<SendResult & { permanent?: boolean }>;

/** Builds the sender: one SMTP connection per message (a dropped connection costs one attempt, no more). */
export function createEmailSender(prisma: PrismaClient, settings: EmailSettings): EmailSender & { close(): void } {
  const transport: Transporter = nodemailer.createTransport({
    url: settings.smtpUrl,
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
  });
  const domain = messageIdDomain(settings.from);
  const send = async (delivery: ClaimedDelivery) => {
    const invoiceId = delivery.event.invoiceId;
    const invoice = invoiceId ? await stampedDocumentOf(prisma, invoiceId) : null;
    const stampedXml = invoice ? stampedXmlOf(invoice) : null;
    if (!invoice || !stampedXml || !invoice.uuid)
      return { ok: false as const, permanent: true, error: 'the invoice has no stamped XML to send' };
    const cancelled = delivery.event.type === 'invoice.cancelled';
    const copy = await customerCopy(
      {
        serie: invoice.serie,
        folio: invoice.folio,
        uuid: invoice.uuid,
        stampedXml,
        cancelled,
      },
      settings.pdf,
    );
    const content = emailContent(copy, invoice.kind, cancelled, settings.pdf.color);
    try {
      const info = (await transport.sendMail({
        from: settings.from,
        ...(settings.replyTo ? { replyTo: settings.replyTo } : {}),
        to: delivery.recipient!,
        subject: content.subject,
        text: content.text,
        html: content.html,
        messageId: `<${delivery.id}@${domain}>`,
        headers: { 'X-Timbra-Event-Id': delivery.event.id, 'X-Timbra-Invoice-Id': invoice.id },
        attachments: [
          { filename: copy.xml.filename, content: copy.xml.content, contentType: 'application/xml' },
          { filename: copy.pdf.filename, content: copy.pdf.content, contentType: 'application/pdf' },
        ],
      })) as { response?: string };
      return { ok: true as const, statusCode: Number.parseInt(info.response ?? '250', 10) || 250 };
    } catch (error) {
      const e = error as Error & { responseCode?: number; code?: string; response?: string };
      // A 5xx reply is the server's final word (no such mailbox, refused): retrying will not change it.
      const permanent = typeof e.responseCode === 'number' && e.responseCode >= 500 && e.responseCode < 600;
      return {
        ok: false as const,
        permanent,
        ...(e.responseCode ? { statusCode: e.responseCode } : {}),
        error: e.response ?? (e.code ? `${e.code}: ${e.message}` : e.message),
      };
    }
  };
  return Object.assign(send, { close: () => transport.close() });
}
