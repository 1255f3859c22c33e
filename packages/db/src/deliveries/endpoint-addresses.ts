/**
 * Where a merchant's webhook endpoint may point: the one owner of the rule, read by the API when an
 * endpoint is registered or changed and by the worker on every delivery (DESIGN.md invariant 16).
 *
 * Only public unicast addresses, unless an operator allowlists ranges (WEBHOOK_ALLOWED_ADDRESSES; the
 * sandbox profile allows loopback). Loopback, private, link-local (169.254.169.254, the clouds'
 * metadata service), CGNAT, multicast, reserved, IPv4-mapped and unspecified addresses are refused.
 * The check is made on every address a name resolves to, and at delivery on the address actually
 * connected to (request-filtering-agent hooks the socket's own lookup), so a name that resolves to a
 * public address at registration and to a private one later (DNS rebinding) is refused when it
 * matters. The same classification (ipaddr.js's `range()`, as the agent uses it) on both sides.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { z } from 'zod';

/** What the sandbox profile allows besides public addresses: this machine. */
export const LOOPBACK_RANGES: readonly string[] = ['127.0.0.0/8', '::1/128'];

/**
 * WEBHOOK_ALLOWED_ADDRESSES as a list of IPs and CIDR ranges (comma-separated).
 * @returns the list, or what is wrong with each entry that is neither.
 */
export function parseAllowedAddresses(text: string): { ranges: string[] } | { problems: string[] } {
  const ranges = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const problems = ranges.flatMap((r) =>
    isIP(r) !== 0 || ipaddr.isValidCIDR(r) ? [] : [`${r} is neither an IP address nor a CIDR range`],
  );
  return problems.length > 0 ? { problems } : { ranges };
}

/**
 * WEBHOOK_ALLOWED_ADDRESSES as both apps' settings read it (one definition): comma-separated IPs and
 * CIDR ranges endpoints may be at although not public. Unset: the profile decides (allowedAddressesFor).
 */
export const allowedAddressesSetting = z
  .string()
  .optional()
  .superRefine((value, ctx) => {
    const parsed = value === undefined ? undefined : parseAllowedAddresses(value);
    if (parsed && 'problems' in parsed)
      for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
  });

/** The ranges allowed besides public addresses: the setting's, else loopback in the sandbox profile and none in production. */
export function allowedAddressesFor(setting: string | undefined, profile: 'production' | 'sandbox'): string[] {
  const parsed = setting === undefined ? undefined : parseAllowedAddresses(setting);
  if (parsed && 'ranges' in parsed) return parsed.ranges;
  return profile === 'sandbox' ? [...LOOPBACK_RANGES] : [];
}

function allowed(address: ipaddr.IPv4 | ipaddr.IPv6, ranges: readonly string[]): boolean {
  return ranges.some((r) => {
    const [range, bits] = isIP(r) !== 0 ? [ipaddr.parse(r), address.kind() === 'ipv4' ? 32 : 128] : ipaddr.parseCIDR(r);
    return address.kind() === range.kind() && address.match(range, bits);
  });
}

/** Why Timbra may not connect to `ip`, or undefined when it may. */
export function addressProblem(ip: string, ranges: readonly string[]): string | undefined {
  if (!ipaddr.isValid(ip)) return `${ip} is not an IP address`;
  const address = ipaddr.parse(ip);
  if (allowed(address, ranges)) return undefined;
  const range = address.range();
  return range === 'unicast' ? undefined : `a ${range} address, not a public one`;
}

/**
 * Why an endpoint's URL may not be delivered to: its host (a literal address, or every address its
 * name resolves to) must be public or allowlisted. A name that does not resolve yet (a receiver still
 * being set up, a resolver down) passes: there is nothing to check now, and every delivery checks the
 * address it connects to.
 */
export async function endpointAddressProblem(url: string, ranges: readonly string[]): Promise<string | undefined> {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    const problem = addressProblem(host, ranges);
    return problem && `${host} is ${problem}`;
  }
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    return undefined;
  }
  for (const { address } of addresses) {
    // The address itself is not said: what a name resolves to inside our network is not the caller's.
    if (addressProblem(address, ranges)) return `${host} resolves to a non-public address`;
  }
  return undefined;
}

/**
 * HTTP and HTTPS agents that connect only where `endpointAddressProblem` would allow, checked on the
 * address the socket connects to. A refused connection fails with a message that names no port state.
 */
export function publicOnlyAgents(ranges: readonly string[]): {
  http: RequestFilteringHttpAgent;
  https: RequestFilteringHttpsAgent;
} {
  const options = { allowIPAddressList: [...ranges], allowPrivateIPAddress: false, allowMetaIPAddress: false };
  return { http: new RequestFilteringHttpAgent(options), https: new RequestFilteringHttpsAgent(options) };
}
