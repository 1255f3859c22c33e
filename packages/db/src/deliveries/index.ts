/** `@timbra/db/deliveries`: outbound webhook endpoints, the events and their deliveries (webhooks and emails), where endpoints may point. */
export {
  claimDueDeliveries,
  DELIVERY_CHANNEL,
  deliveryBackoffMs,
  EVENT_TYPES,
  recordDeliveryAttempt,
  releaseDeliveryClaim,
  type AttemptOutcome,
  type ClaimedDelivery,
  type DeliveryChannel,
  type DisablePolicy,
  type EventType,
} from './deliveries.ts';
export {
  newEndpointSecret,
  replayDelivery,
  resendInvoiceEmail,
  rotateEndpointSecret,
  setEndpointStatus,
} from './operator-actions.ts';
export {
  addressProblem,
  allowedAddressesFor,
  allowedAddressesSetting,
  endpointAddressProblem,
  LOOPBACK_RANGES,
  parseAllowedAddresses,
  publicOnlyAgents,
} from './endpoint-addresses.ts';
export {
  deadDeliveriesUnreplayed,
  deliveriesStanding,
  deliveryById,
  DELIVERY_STATUSES,
  endpointById,
  eventById,
  insertEndpoint,
  listDeliveries,
  listEvents,
  type EventFilter,
  listEndpoints,
  updateEndpoint,
  type DeliveryFilter,
  type DeliveryStatus,
  type NewEndpoint,
} from './reads.ts';
