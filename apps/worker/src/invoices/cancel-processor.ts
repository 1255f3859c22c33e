import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { PacError, parseXml, type PacClient, type XmlElement } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import {
  finishCancellation,
  loadCancelRow,
  markCancellationAccepted,
  recordCancellationPoll,
  type CancelRow,
} from '@timbra/db/invoices';
import { failureText } from '../errors.ts';
import type { StampJobData } from '../stamping/jobs.ts';
import type { PacChain } from '../stamping/pac-chain.ts';

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
  /** Told of each cancellation that reached its end (metrics). */
  onOutcome?: (outcome: 'cancelled' | 'rejected' | 'failed') => void;
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
    const row = await loadCancelRow(prisma, job.data.outboxId);
    if (!row || row.outboxStatus === 'done' || row.outboxStatus === 'failed')
      return { skipped: row?.outboxStatus ?? 'missing' };
    const log = deps.logger.child({ jobId: job.id, invoiceId: row.invoiceId, cancelRequestId: row.requestId });
    // A request is written only for a stamped invoice (request-cancellation, the duplicate repair).
    if (!row.uuid || !row.frozenXml) throw new Error(`cancel request ${row.requestId}: its invoice is not stamped`);
    const client = deps.chain.client(row.pac);
    const { rfcEmisor, rfcReceptor } = partiesOf(row.frozenXml);
    // A duplicate (same document, another UUID) has the invoice's parties and total.
    const uuid = row.duplicateUuid ?? row.uuid;

    if (row.requestStatus === 'requested') {
      const refused = await requestAtPac(deps, job, row, client, { uuid, rfcEmisor }, log);
      if (refused) return refused;
    }

    const status = await client.status({ uuid, rfcEmisor, rfcReceptor, total: row.total });
    if (status.estado === 'Cancelado') {
      await finishCancellation(deps.prisma, row, 'cancelled', null, status.estatusCancelacion);
      log.info({ estatus: status.estatusCancelacion }, 'invoice cancelled');
      deps.onOutcome?.('cancelled');
      return { status: 'cancelled' };
    }
    if (status.estatusCancelacion === 'Solicitud rechazada') {
      await finishCancellation(
        deps.prisma,
        row,
        'rejected',
        failureText('RECEPTOR_REJECTED', 'Solicitud rechazada: the receptor rejected it'),
        status.estatusCancelacion,
      );
      log.warn('cancellation rejected by the receptor; the invoice stays stamped');
      deps.onOutcome?.('rejected');
      return { status: 'rejected' };
    }
    // Not final yet (En proceso, or the SAT has not caught up): look again later.
    await recordCancellationPoll(prisma, row.requestId, status.estatusCancelacion || status.estado);
    const delay = Math.min(deps.poll.maxMs, deps.poll.baseMs * 2 ** Math.min(row.polls, 20));
    await job.moveToDelayed(Date.now() + delay, token);
    throw new DelayedError();
  };
}

/**
 * Step 1: the cancellation asked of the PAC. Accepted (201, 202): recorded, and undefined is
 * returned for step 2. Refused for good, or on the last attempt: the request `failed` and that is
 * the answer. Otherwise (a transient failure, or 205: the SAT does not know the UUID yet) thrown,
 * for BullMQ to ask again with backoff.
 */
async function requestAtPac(
  deps: CancelProcessorDeps,
  job: Job<StampJobData>,
  row: CancelRow,
  client: PacClient,
  { uuid, rfcEmisor }: { uuid: string; rfcEmisor: string },
  log: Logger,
): Promise<{ status: 'failed'; code?: string } | undefined> {
  let code: string;
  let acuse: string;
  try {
    ({ uuidCode: code, acuse } = await client.cancel({
      uuid,
      rfcEmisor,
      motivo: row.motivo,
      ...(row.folioSustitucion ? { folioSustitucion: row.folioSustitucion } : {}),
      csd: deps.csd,
    }));
  } catch (error) {
    const pacError = error instanceof PacError ? error : undefined;
    if (pacError?.outcome === 'permanent' || lastAttempt(job)) {
      const reason = pacError ? `${pacError.pacCode}: ${pacError.message}` : String(error);
      await finishCancellation(deps.prisma, row, 'failed', reason);
      log.warn({ reason }, 'cancellation failed; the invoice stays stamped');
      deps.onOutcome?.('failed');
      return { status: 'failed' };
    }
    throw error;
  }
  if (code === '205') {
    if (lastAttempt(job)) {
      await finishCancellation(
        deps.prisma,
        row,
        'failed',
        failureText('SAT_UUID_NOT_FOUND', 'the SAT never found this UUID (205)'),
      );
      log.warn({ code }, 'cancellation failed: the SAT never found the UUID; the invoice stays stamped');
      deps.onOutcome?.('failed');
      return { status: 'failed', code };
    }
    throw new Error('205: the SAT does not know this UUID yet; asking again later');
  }
  if (code !== '201' && code !== '202') {
    await finishCancellation(deps.prisma, row, 'failed', failureText('PAC_CANCEL_REFUSED', `the PAC answered ${code}`));
    log.warn({ code }, 'cancellation refused by the PAC; the invoice stays stamped');
    deps.onOutcome?.('failed');
    return { status: 'failed', code };
  }
  await markCancellationAccepted(deps.prisma, row.requestId, { uuidCode: code, acuse, pac: client.name });
  log.info({ code, pac: client.name }, 'cancellation requested');
  return undefined;
}

const lastAttempt = (job: Job) => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** The emisor's and receptor's RFCs, as the CFDI says them (the SAT's status query needs both). */
function partiesOf(xml: string): { rfcEmisor: string; rfcReceptor: string } {
  const root = parseXml(xml);
  const rfc = (local: string) =>
    root.children
      .find((c): c is XmlElement => c.kind === 'element' && c.local === local)
      ?.attrs.find(([k]) => k === 'Rfc')?.[1] ?? '';
  return { rfcEmisor: rfc('Emisor'), rfcReceptor: rfc('Receptor') };
}
