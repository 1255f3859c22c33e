-- A test event (POST /v1/webhook-endpoints/:id/test): written with one webhook delivery to the endpoint
-- that asked for it, signed and sent like any other, so an integrator can check a receiver before real
-- events flow. It never goes through timbra_record_events: no endpoint subscribes to it, no email.
ALTER TABLE events DROP CONSTRAINT events_type;
ALTER TABLE events ADD CONSTRAINT events_type CHECK (type IN ('invoice.stamped', 'invoice.needs_data',
  'invoice.failed', 'invoice.cancelled', 'invoice.cancellation_rejected', 'payment.recorded', 'refund.recorded',
  'ticket.created', 'global.issued', 'endpoint.test'));
