/** `npm run ops --` commands: Deliveries (webhooks and emails) and the providers' events that failed. */
import { userInfo } from 'node:os';
import { parseSince } from '../operations/since.ts';
import { type Command, Option } from 'commander';
import { dbLib, UsageError, uuidArg, out, db, setExitCode, env, organizationDb, organizationOfRow } from './context.ts';

/** `deliveries:list`: emails and webhooks not delivered (dead by default: they wait for a person), newest first. */
function deliveriesList(program: Command): void {
  program
    .command('deliveries:list')
    .description('emails and webhooks not delivered (dead by default: they wait for a person), newest first')
    .addOption(
      new Option('--status <status>', 'dead, pending (not yet delivered) or delivered')
        .choices(['dead', 'pending', 'delivered'])
        .default('dead'),
    )
    .addOption(new Option('--channel <channel>', 'email or webhook').choices(['email', 'webhook']))
    .action(async (options: { status: 'dead' | 'pending' | 'delivered'; channel?: 'email' | 'webhook' }) => {
      const prisma = await db();
      const { deliveriesStanding } = await dbLib.deliveries();
      const rows = await deliveriesStanding(prisma, options, 500);
      out(
        rows.map((r) => ({
          deliveryId: r.id,
          channel: r.channel,
          event: r.event.type,
          invoiceId: r.event.invoiceId,
          to: r.recipient ?? r.endpoint?.url,
          status: r.status,
          attempts: r.attempts,
          lastError: r.lastError,
          at: r.updatedAt,
        })),
        rows.length === 0
          ? `no ${options.status} deliveries`
          : rows
              .map(
                (r) =>
                  `${r.id}  ${r.channel.padEnd(7)}  ${r.event.type.padEnd(29)}  ${r.recipient ?? r.endpoint?.url ?? ''}  attempts=${r.attempts}  ${r.lastError ?? ''}`,
              )
              .join('\n'),
      );
    });
}

/** `deliveries:replay`: send a delivery's event again to the same endpoint or address (a new delivery; receivers dedupe on the event id). */
function deliveriesReplay(program: Command): void {
  program
    .command('deliveries:replay')
    .description(
      "send a delivery's event again to the same endpoint or address (a new delivery; receivers dedupe on the event id)",
    )
    .argument('[deliveryId]', 'a delivery (from deliveries:list)', uuidArg('deliveryId'))
    .option('--all-dead', 'every dead delivery (of --channel)')
    .addOption(new Option('--channel <channel>', 'with --all-dead: email or webhook').choices(['email', 'webhook']))
    .action(async (deliveryId: string | undefined, options: { allDead?: boolean; channel?: 'email' | 'webhook' }) => {
      if (!deliveryId === !options.allDead)
        throw new UsageError('deliveries:replay: give a delivery id or --all-dead (not both)');
      const prisma = await db();
      const { deadDeliveriesUnreplayed, replayDelivery } = await dbLib.deliveries();
      const ids = options.allDead ? await deadDeliveriesUnreplayed(prisma, options.channel) : [deliveryId!];
      const by = `ops:${env().TIMBRA_OPERATOR ?? userInfo().username}`;
      const results = [];
      for (const id of ids) {
        // Written in the delivery's organization's name (the replay is its row).
        const organization = await organizationOfRow('deliveries', id);
        const replay = await replayDelivery(organization ? await organizationDb(organization) : prisma, id, by);
        results.push(
          !replay
            ? { id, ok: false, reason: 'no such delivery' }
            : 'refused' in replay
              ? { id, ok: false, reason: 'its endpoint is disabled: enable it first (PATCH /v1/webhook-endpoints/:id)' }
              : { id, ok: true, replay: replay.id },
        );
      }
      out(
        results,
        results
          .map((r) => (r.ok ? `${r.id}  replayed as ${r.replay}` : `${r.id}  not replayed: ${r.reason}`))
          .join('\n') || 'no dead deliveries',
      );
      setExitCode(results.some((r) => !r.ok) ? 1 : 0);
    });
}

/** `webhooks:failed`: signed provider events that could not be recorded (stored as failed), newest first, with their reasons. */
function webhooksFailed(program: Command): void {
  program
    .command('webhooks:failed')
    .description(
      'signed provider events that could not be recorded (stored as failed), newest first, with their reasons',
    )
    .addOption(
      new Option('--since <when>', 'ISO 8601 date or time, or a duration back from now (30m, 12h, 7d)').argParser((v) =>
        parseSince(v),
      ),
    )
    .action(async (options: { since?: Date }) => {
      const prisma = await db();
      const rows = await (await dbLib.webhookEvents()).failedWebhookEvents(prisma, options.since, 500);
      out(
        rows,
        rows.length === 0
          ? 'no failed webhook events'
          : rows
              .map((r) => `${r.receivedAt.toISOString()}  ${r.provider}  ${r.eventId}  ${r.type}  ${r.reason ?? ''}`)
              .join('\n'),
      );
    });
}

export function deliveryCommands(program: Command): void {
  deliveriesList(program);
  deliveriesReplay(program);
  webhooksFailed(program);
}
