/** What the API's logger never writes: credentials and signatures in request headers. */
export const REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["stripe-signature"]',
  'req.headers["x-signature"]',
  'req.headers.cookie',
];
