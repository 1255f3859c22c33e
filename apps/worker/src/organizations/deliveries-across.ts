/**
 * Platform mode's deliveries: every organization's emails and webhooks from one worker. Each
 * organization has its own dispatcher (its client, its email sender), built on first use; a round
 * drains, side by side, the dispatchers of the organizations with deliveries open, so one
 * organization's slow endpoint holds its own slots, never another's.
 */
import type { Logger } from 'pino';

export interface Drainable {
  drainAll(): Promise<number>;
  /** Lets go of what it holds (its SMTP connections) once it is replaced or the worker stops. */
  close?(): void;
}

export class DeliveriesAcross {
  private readonly dispatchers = new Map<string, { dispatcher: Promise<Drainable>; at: number }>();

  constructor(
    private readonly deps: {
      /** The organizations with deliveries open (`deliveryOrganizations`). */
      due: () => Promise<string[]>;
      /** An organization's dispatcher, on its own client (with its own sender and logo). */
      build: (organizationId: string) => Drainable | Promise<Drainable>;
      /**
       * How long a dispatcher is kept before it is built again with the organization's sender and
       * logo as they are then. Default 5 minutes.
       */
      refreshMs?: number;
      logger: Logger;
    },
  ) {}

  private dispatcherOf(organizationId: string): Promise<Drainable> {
    const kept = this.dispatchers.get(organizationId);
    if (kept && Date.now() - kept.at < (this.deps.refreshMs ?? 300_000)) return kept.dispatcher;
    const dispatcher = Promise.resolve(this.deps.build(organizationId));
    const entry = { dispatcher, at: Date.now() };
    this.dispatchers.set(organizationId, entry);
    // The one it replaces is idle (rounds do not overlap): let go of it once the new one is built.
    if (kept) void dispatcher.then(() => kept.dispatcher.then((old) => old.close?.())).catch(() => undefined);
    // A build that failed (the database away) is tried again next round.
    dispatcher.catch(() => {
      if (this.dispatchers.get(organizationId) === entry) this.dispatchers.delete(organizationId);
    });
    return dispatcher;
  }

  /** Lets go of every dispatcher's connections (the worker stopping). */
  async close(): Promise<void> {
    for (const { dispatcher } of this.dispatchers.values()) (await dispatcher.catch(() => undefined))?.close?.();
    this.dispatchers.clear();
  }

  /** One round: every organization with deliveries open, drained side by side; returns how many were attempted. */
  async drainAll(): Promise<number> {
    const counts = await Promise.all(
      (await this.deps.due()).map((id) =>
        this.dispatcherOf(id)
          .then((dispatcher) => dispatcher.drainAll())
          .catch((error: unknown) => {
            this.deps.logger.error({ err: error, organization: id }, 'delivery round failed for an organization');
            return 0;
          }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }
}
