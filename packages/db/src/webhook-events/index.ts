/** `@timbra/db/webhook-events`: the providers' incoming events (Stripe, Mercado Pago), claimed once each. */
export {
  claimWebhookEvents,
  failedWebhookEvents,
  listWebhookEvents,
  type ReceivedEvent,
  type WebhookEventFilter,
} from './webhook-events.ts';
