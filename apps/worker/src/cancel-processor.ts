import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { PacError, parseXml, type CancelMotivo, type XmlElement } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import type { StampJobData } from './jobs.ts';
import type { PacChain } from './pac-chain.ts';

/** The emisor's CSD as files' bytes and password: a cancellation request is signed with it. */
export interface CsdCredentials {
  cer: Uint8Array;
  key: Uint8Array;
  password: string;
}

export interface CancelProcessorDeps {
  prisma: PrismaClient;
  chain: PacChain;
  csd: CsdCredentials;
  logger: Logger;
  /** How often the SAT is asked while a cancellation is in process: base, doubling, capped (ms). */
  poll: { baseMs: number; maxMs: number };
}

interface LoadedCancel {
  outbox_status: string;
  request_id: string;
  request_status: string;
  motivo: CancelMotivo;
  folio_sustitucion: string | null;
  duplicate_uuid: string | null;
  polls: number;
  invoice_id: string;
  uuid: string;
  total: string;
  pac: string | null;
  frozen_xml: string;
}

/**
 * Carries one cancellation (an outbox row of kind `cancel`) to the end — of the invoice's CFDI, or
 * of a duplicate of it (`duplicate_uuid`, queued by `ops reconcile --fix --execute`):
 *
 * 1. asks the PAC that stamped the invoice to cancel it (signed with the CSD). 201 (accepted) and 202
 *    (cancelled before: a repeat of a request whose answer was lost) both move it to `accepted`;
 *    205 (the SAT does not know the UUID yet) and transient or ambiguous failures retry with
 *    backoff (asking twice is harmless: the second answer is 202); a refusal, or the last attempt,
 *    fails it and the invoice is `stamped` again;
 * 2. asks the SAT for the CFDI's status until it is final: Cancelado → the invoice `cancelled`;
 *    Solicitud rechazada (the receptor said no) → `rejected`, the invoice `stamped` again, the reason
 *    kept; anything else (En proceso) → looked at again later, with backoff, without using up the
 *    job's attempts.
 *
 * Each step is written before the next is taken, so a repeated job resumes where the last one was.
 */
export function createCancelProcessor(deps: CancelProcessorDeps) {
  return async (job: Job<StampJobData>, token?: string) => {
    const { prisma } = deps;
    const [row] = await prisma.$queryRaw<LoadedCancel[]>`
      SELECT o.status AS outbox_status, c.id AS request_id, c.status AS request_status, c.motivo,
             c.folio_sustitucion, c.duplicate_uuid, c.polls, i.id AS invoice_id, i.uuid, i.total::text, i.pac, i.frozen_xml
      FROM outbox o JOIN cancel_requests c ON c.id = o.cancel_request_id JOIN invoices i ON i.id = o.invoice_id
      WHERE o.id = ${job.data.outboxId}::uuid`;
    if (!row || row.outbox_status === 'done' || row.outbox_status === 'failed')
      return { skipped: row?.outbox_status ?? 'missing' };
    const log = deps.logger.child({ jobId: job.id, invoiceId: row.invoice_id, cancelRequestId: row.request_id });
    const client = deps.chain.client(row.pac);
    const { rfcEmisor, rfcReceptor } = partiesOf(row.frozen_xml);
    // A duplicate (same document, another UUID) has the invoice's parties and total.
    const uuid = row.duplicate_uuid ?? row.uuid;

    if (row.request_status === 'requested') {
      let code: string;
      let acuse: string;
      try {
        ({ uuidCode: code, acuse } = await client.cancel({
          uuid,
          rfcEmisor,
          motivo: row.motivo,
          ...(row.folio_sustitucion ? { folioSustitucion: row.folio_sustitucion } : {}),
          csd: deps.csd,
        }));
      } catch (error) {
        const pacError = error instanceof PacError ? error : undefined;
        if (pacError?.outcome === 'permanent' || lastAttempt(job)) {
          const reason = pacError ? `${pacError.pacCode}: ${pacError.message}` : String(error);
          await finish(deps, row, 'failed', reason);
          log.warn({ reason }, 'cancellation failed; the invoice stays stamped');
          return { status: 'failed' };
        }
        throw error;
      }
      if (code === '205') {
        if (lastAttempt(job)) {
          await finish(deps, row, 'failed', '205: the SAT never found this UUID');
          return { status: 'failed', code };
        }
        throw new Error('205: the SAT does not know this UUID yet; asking again later');
      }
      if (code !== '201' && code !== '202') {
        await finish(deps, row, 'failed', `the PAC answered ${code}`);
        return { status: 'failed', code };
      }
      await prisma.cancelRequest.update({
        where: { id: row.request_id },
        data: { status: 'accepted', uuidCode: code, acuse, pac: client.name },
      });
      log.info({ code, pac: client.name }, 'cancellation requested');
    }

    const status = await client.status({ uuid, rfcEmisor, rfcReceptor, total: row.total });
    if (status.estado === 'Cancelado') {
      await finish(deps, row, 'cancelled', null, status.estatusCancelacion);
      log.info({ estatus: status.estatusCancelacion }, 'invoice cancelled');
      return { status: 'cancelled' };
    }
    if (status.estatusCancelacion === 'Solicitud rechazada') {
      await finish(deps, row, 'rejected', 'Solicitud rechazada: the receptor rejected it', status.estatusCancelacion);
      log.warn('cancellation rejected by the receptor; the invoice stays stamped');
      return { status: 'rejected' };
    }
    // Not final yet (En proceso, or the SAT has not caught up): look again later.
    await prisma.cancelRequest.update({
      where: { id: row.request_id },
      data: { polls: { increment: 1 }, estatusCancelacion: status.estatusCancelacion || status.estado },
    });
    const delay = Math.min(deps.poll.maxMs, deps.poll.baseMs * 2 ** Math.min(row.polls, 20));
    await job.moveToDelayed(Date.now() + delay, token);
    throw new DelayedError();
  };
}

const lastAttempt = (job: Job) => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** Ends a cancellation: its request, the invoice (cancelled, or stamped again) and the outbox row, in one transaction. */
async function finish(
  deps: CancelProcessorDeps,
  row: LoadedCancel,
  outcome: 'cancelled' | 'rejected' | 'failed',
  reason: string | null,
  estatus?: string,
): Promise<void> {
  const { prisma } = deps;
  await prisma.$transaction([
    prisma.cancelRequest.update({
      where: { id: row.request_id },
      data: { status: outcome, reason, ...(estatus ? { estatusCancelacion: estatus } : {}) },
    }),
    // Cancelling a duplicate leaves the invoice — the kept CFDI — as it is.
    ...(row.duplicate_uuid
      ? []
      : [
          prisma.invoice.updateMany({
            where: { id: row.invoice_id, status: 'cancel_requested' },
            data: { status: outcome === 'cancelled' ? 'cancelled' : 'stamped' },
          }),
        ]),
    prisma.outboxRow.updateMany({
      where: { cancelRequestId: row.request_id },
      // Done either way: the request records how it ended; a new cancellation is a new request.
      data: { status: 'done', ...(reason ? { lastError: reason } : {}) },
    }),
  ]);
}

/** The emisor's and receptor's RFCs, as the CFDI says them (the SAT's status query needs both). */
function partiesOf(xml: string): { rfcEmisor: string; rfcReceptor: string } {
  const root = parseXml(xml);
  const rfc = (local: string) =>
    root.children
      .find((c): c is XmlElement => c.kind === 'element' && c.local === local)
      ?.attrs.find(([k]) => k === 'Rfc')?.[1] ?? '';
  return { rfcEmisor: rfc('Emisor'), rfcReceptor: rfc('Receptor') };
}
