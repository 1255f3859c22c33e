// RFCs (personas morales and físicas) and anything that looks like XML: job views show neither.
const RFC = /\b[A-ZÑ&]{3,4}\d{6}[A-Z\d]{3}\b/g;
const XML = /<[A-Za-z?!/][^>]*>/;

/** Job data and results as the dashboard shows them: RFCs and XML replaced, recursively. */
export function redactForDashboard(value: unknown): unknown {
  if (typeof value === 'string') {
    return XML.test(value) ? '[xml redacted]' : value.replace(RFC, '[rfc]');
  }
  if (Array.isArray(value)) return value.map(redactForDashboard);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactForDashboard(v)]));
  }
  return value;
}
