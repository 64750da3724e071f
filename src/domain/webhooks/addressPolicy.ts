import { BlockList, isIP } from 'node:net';
import { DomainError } from '../errors.js';

/**
 * Where the service may send a study's events (issue 22.5): `https` on a public network. `http`,
 * loopback and private addresses only when the operator allows them (`WEBHOOKS_ALLOW_INSECURE=1`, for
 * development and tests). Checked when subscribing and again at each delivery on the addresses the
 * name resolves to then, so a name that later resolves to an inside address (DNS rebinding) reaches nothing.
 */
export interface AddressPolicy {
  allowInsecure: boolean;
}

/** Addresses that are not on the public Internet: loopback, private, link-local, shared, multicast, reserved. */
const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');

/**
 * Whether an IP address is on the public Internet. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is
 * judged as its IPv4 address: BlockList matches it against the IPv4 subnets.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

function refused(url: string, reason: 'not_a_url' | 'not_https' | 'credentials' | 'not_public'): DomainError {
  return new DomainError('webhook_url_refused', { url }, [{ pointer: '/url', code: 'webhook_url_refused', params: { url, variant: reason } }]);
}

/** The host as an address when it is one (`[::1]` loses its brackets), else undefined. */
function literalAddress(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) ? host : undefined;
}

/**
 * Checks an address's form: a URL, `https` (or `http` when insecure addresses are allowed), no user or
 * password in it (the secret signs; a password in the URL would sit in logs), and, when the host is an
 * IP address, a public one.
 * @throws DomainError `webhook_url_refused`
 */
export function checkWebhookUrl(text: string, policy: AddressPolicy): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refused(text, 'not_a_url');
  }
  if (url.protocol !== 'https:' && !(policy.allowInsecure && url.protocol === 'http:')) throw refused(text, 'not_https');
  if (url.username || url.password) throw refused(text, 'credentials');
  const literal = literalAddress(url);
  if (literal !== undefined) checkResolvedAddresses(text, [literal], policy);
  return url;
}

/**
 * Checks the addresses a host name resolved to: every one must be public, unless insecure addresses
 * are allowed. One inside address among public ones refuses the whole name.
 * @throws DomainError `webhook_url_refused`
 */
export function checkResolvedAddresses(text: string, addresses: string[], policy: AddressPolicy): void {
  if (policy.allowInsecure) return;
  if (addresses.length === 0 || !addresses.every(isPublicAddress)) throw refused(text, 'not_public');
}
