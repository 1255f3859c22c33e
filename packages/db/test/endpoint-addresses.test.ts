/**
 * Where a webhook endpoint may point (DESIGN.md invariant 16): public unicast addresses, or ranges an
 * operator allowlists. Names are checked on every address they resolve to (`localhost` resolves here).
 */
import { describe, expect, it } from '@jest/globals';
import {
  addressProblem,
  allowedAddressesFor,
  endpointAddressProblem,
  LOOPBACK_RANGES,
  parseAllowedAddresses,
} from '../src/deliveries/index.ts';

describe('which addresses an endpoint may be at', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['::ffff:127.0.0.1', 'ipv4Mapped'],
    ['64:ff9b::a00:1', 'rfc6052'],
  ])('%s is refused (%s)', (ip, range) => {
    expect(addressProblem(ip, [])).toBe(`a ${range} address, not a public one`);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700::1111'])('%s, public, is allowed', (ip) => {
    expect(addressProblem(ip, [])).toBeUndefined();
  });

  it('an allowlisted range or address lets a non-public one through, and only that one', () => {
    expect(addressProblem('10.1.2.3', ['10.0.0.0/8'])).toBeUndefined();
    expect(addressProblem('10.1.2.3', ['10.1.2.3'])).toBeUndefined();
    expect(addressProblem('10.1.2.4', ['10.1.2.3'])).toBeDefined();
    expect(addressProblem('192.168.0.1', ['10.0.0.0/8'])).toBeDefined();
    expect(addressProblem('::1', LOOPBACK_RANGES)).toBeUndefined();
    expect(addressProblem('127.0.0.1', LOOPBACK_RANGES)).toBeUndefined();
    expect(addressProblem('::ffff:127.0.0.1', LOOPBACK_RANGES)).toBeDefined();
  });

  it('checks a URL by its literal address, or by every address its name resolves to', async () => {
    expect(await endpointAddressProblem('https://127.0.0.1/hooks', [])).toBe(
      '127.0.0.1 is a loopback address, not a public one',
    );
    expect(await endpointAddressProblem('http://[::1]:8080/', [])).toBe('::1 is a loopback address, not a public one');
    expect(await endpointAddressProblem('https://localhost/hooks', [])).toBe(
      'localhost resolves to a non-public address',
    );
    expect(await endpointAddressProblem('https://localhost/hooks', LOOPBACK_RANGES)).toBeUndefined();
    // Not resolvable now: left to the check every delivery makes on the address it connects to.
    expect(await endpointAddressProblem('https://nothing-here.invalid/', [])).toBeUndefined();
    expect(await endpointAddressProblem('https://93.184.216.34/', [])).toBeUndefined();
  });

  it('reads WEBHOOK_ALLOWED_ADDRESSES: IPs and CIDRs, anything else named; unset, the profile decides', () => {
    expect(parseAllowedAddresses(' 10.0.0.0/8, 192.168.1.7 ,fd00::/8')).toEqual({
      ranges: ['10.0.0.0/8', '192.168.1.7', 'fd00::/8'],
    });
    expect(parseAllowedAddresses('10.0.0.0/33,intranet')).toEqual({
      problems: [
        '10.0.0.0/33 is neither an IP address nor a CIDR range',
        'intranet is neither an IP address nor a CIDR range',
      ],
    });
    expect(allowedAddressesFor(undefined, 'production')).toEqual([]);
    expect(allowedAddressesFor(undefined, 'sandbox')).toEqual(LOOPBACK_RANGES);
    expect(allowedAddressesFor('', 'sandbox')).toEqual([]);
    expect(allowedAddressesFor('10.0.0.0/8', 'production')).toEqual(['10.0.0.0/8']);
  });
});
