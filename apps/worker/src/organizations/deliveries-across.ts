/**
 * Platform mode's deliveries: every organization's emails and webhooks from one worker. Each
 * organization has its own dispatcher (its client, its email sender), built on first use; a round
 * drains, side by side, the dispatchers of the organizations with deliveries open, so one
 * organization's slow endpoint holds its own slots, never another's.
 */
import type { Logger } from 'pino';

export interface Drainable {
  drainAll(): Promise<number>;
}

export class DeliveriesAcross {
  private readonly dispatchers = new Map<string, Promise<Drainable>>();

  constructor(
    private readonly deps: {
      /** The organizations with deliveries open (`deliveryOrganizations`). */
      due: () => Promise<string[]>;
      /** An organization's dispatcher, on its own client (with its own sender and logo). */
      build: (organizationId: string) => Drainable | Promise<Drainable>;
      logger: Logger;
    },
  ) {}

  private dispatcherOf(organizationId: string): Promise<Drainable> {
    let dispatcher = this.dispatchers.get(organizationId);
    if (!dispatcher) {
      dispatcher = Promise.resolve(this.deps.build(organizationId));
      this.dispatchers.set(organizationId, dispatcher);
      // A build that failed (the database away) is tried again next round.
      dispatcher.catch(() => this.dispatchers.delete(organizationId));
    }
    return dispatcher;
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
