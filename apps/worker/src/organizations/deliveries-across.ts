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
  private readonly dispatchers = new Map<string, Drainable>();

  constructor(
    private readonly deps: {
      /** The organizations with deliveries open (`deliveryOrganizations`). */
      due: () => Promise<string[]>;
      /** An organization's dispatcher, on its own client. */
      build: (organizationId: string) => Drainable;
      logger: Logger;
    },
  ) {}

  private dispatcherOf(organizationId: string): Drainable {
    let dispatcher = this.dispatchers.get(organizationId);
    if (!dispatcher) {
      dispatcher = this.deps.build(organizationId);
      this.dispatchers.set(organizationId, dispatcher);
    }
    return dispatcher;
  }

  /** One round: every organization with deliveries open, drained side by side; returns how many were attempted. */
  async drainAll(): Promise<number> {
    const counts = await Promise.all(
      (await this.deps.due()).map((id) =>
        this.dispatcherOf(id)
          .drainAll()
          .catch((error: unknown) => {
            this.deps.logger.error({ err: error, organization: id }, 'delivery round failed for an organization');
            return 0;
          }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }
}
