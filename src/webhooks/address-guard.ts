/**
 * Which addresses a webhook may be sent to. Private, loopback, link-local, unique-local, shared
 * (CGNAT), multicast, reserved and unspecified addresses — IPv4 and IPv6, including IPv4 carried in
 * IPv6 (mapped, translated, compatible, NAT64, 6to4; local-use NAT64 and Teredo wholesale) — are refused unless WEBHOOK_ALLOWED_HOSTS names the host or
 * the address. The check is made on every address a name resolves to, and the connection is then made
 * to the checked address itself (see webhook-sender.ts), so a name that resolves differently the
 * second time (DNS rebinding) cannot reach what the check refused.
 */
import dns from 'node:dns';
import net from 'node:net';

/** A URL, or an address it resolves to, that a webhook may not be sent to. */
export class RefusedAddressError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefusedAddressError';
  }
}

export type ResolvedAddress = { address: string; family: 4 | 6 };

const IPV4_REFUSED: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
];
const IPV6_REFUSED: ReadonlyArray<[string, number]> = [
  ['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64],
  // Local-use NAT64 (RFC 8215: the IPv4 address sits where the operator's prefix length puts it) and
  // Teredo (the client's IPv4 address obfuscated): neither is a public destination of its own.
  ['64:ff9b:1::', 48], ['2001::', 32],
];
/** Resolved addresses looked at per name at the most. */
const ADDRESSES_MAX = 32;

const refused_v4 = new net.BlockList();
for (const [address, prefix] of IPV4_REFUSED) refused_v4.addSubnet(address, prefix, 'ipv4');
const refused_v6 = new net.BlockList();
for (const [address, prefix] of IPV6_REFUSED) refused_v6.addSubnet(address, prefix, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (which may end in dotted IPv4), or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  if (net.isIPv6(address) === false) return null;
  let text = address.toLowerCase().split('%')[0] as string;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted !== null) {
    const bytes = (dotted[1] as string).split('.').map(Number);
    text = text.slice(0, -(dotted[1] as string).length) + `${((bytes[0] ?? 0) * 256 + (bytes[1] ?? 0)).toString(16)}:${((bytes[2] ?? 0) * 256 + (bytes[3] ?? 0)).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - left.length - right.length;
  const groups = [...left, ...(tail === undefined ? [] : Array<string>(missing).fill('0')), ...right].map((group) => parseInt(group, 16));
  return groups.length === 8 ? groups : null;
}

function ipv4Of(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * The IPv4 address an IPv6 address carries (mapped ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16), or null.
 */
export function embeddedIpv4(address: string): string | null {
  const groups = ipv6Groups(address);
  if (groups === null) return null;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return ipv4Of(g6, g7);
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) return ipv4Of(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4Of(g6, g7);
  if (g0 === 0x2002) return ipv4Of(g1, g2);
  return null;
}

/** The canonical text of an address (IPv6 as eight full groups), for comparing with the allow-list. */
function canonical(address: string): string {
  const groups = ipv6Groups(address);
  return groups === null ? address : groups.map((group) => group.toString(16)).join(':');
}

/** Whether an address (IPv4 or IPv6) is one a webhook is refused by default. */
export function isRefusedAddress(address: string): boolean {
  if (net.isIPv4(address)) return refused_v4.check(address, 'ipv4');
  if (!net.isIPv6(address)) return true;
  const embedded = embeddedIpv4(address);
  if (embedded !== null) return refused_v4.check(embedded, 'ipv4');
  const plain = address.split('%')[0] as string;
  return refused_v6.check(plain, 'ipv6');
}

export type Resolver = (hostname: string) => Promise<ReadonlyArray<{ address: string; family: number }>>;

const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

export class AddressGuard {
  private readonly allowed_hosts: ReadonlySet<string>;
  private readonly allowed_addresses: ReadonlySet<string>;
  private readonly resolver: Resolver;

  /** `allowed`: host names and addresses (WEBHOOK_ALLOWED_HOSTS) that may be sent to whatever they are. */
  constructor(allowed: readonly string[], resolver: Resolver = systemResolver) {
    const names = allowed.map((entry) => stripBrackets(entry.trim().toLowerCase())).filter((entry) => entry !== '');
    this.allowed_hosts = new Set(names.filter((entry) => net.isIP(entry) === 0));
    this.allowed_addresses = new Set(names.filter((entry) => net.isIP(entry) !== 0).flatMap((entry) => [canonical(entry), embeddedIpv4(entry) ?? canonical(entry)]));
    this.resolver = resolver;
  }

  /** Whether `address` may be sent to when reached through `hostname`. */
  allows(hostname: string, address: string): boolean {
    if (this.allowed_hosts.has(stripBrackets(hostname.toLowerCase()))) return true;
    if (this.allowed_addresses.has(canonical(address)) || this.allowed_addresses.has(embeddedIpv4(address) ?? '')) return true;
    return !isRefusedAddress(address);
  }

  /**
   * The check at creation: an http(s) URL without credentials whose host, when it is an address
   * literal, may be sent to. A host name is only resolved when sending.
   */
  checkUrl(text: string): URL {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new RefusedAddressError('url is not a valid absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RefusedAddressError('url must be http:// or https://');
    if (url.username !== '' || url.password !== '') throw new RefusedAddressError('url must not carry credentials');
    const host = stripBrackets(url.hostname);
    if (host === '') throw new RefusedAddressError('url has no host');
    if (net.isIP(host) !== 0 && !this.allows(host, host)) {
      throw new RefusedAddressError(`url names ${host}, a private, loopback, link-local or otherwise non-public address; WEBHOOK_ALLOWED_HOSTS can allow it`);
    }
    return url;
  }

  /** Resolves `hostname` (every address), refuses it when any address is refused, and returns the address to connect to. */
  async resolve(hostname: string): Promise<ResolvedAddress> {
    const host = stripBrackets(hostname);
    let addresses: ReadonlyArray<{ address: string; family: number }>;
    try {
      addresses = (await this.resolver(host)).slice(0, ADDRESSES_MAX);
    } catch (error) {
      throw new RefusedAddressError(`${host} does not resolve (${(error as { code?: string }).code ?? 'error'})`);
    }
    if (addresses.length === 0) throw new RefusedAddressError(`${host} does not resolve`);
    const refused = addresses.find((entry) => !this.allows(host, entry.address));
    if (refused !== undefined) {
      throw new RefusedAddressError(`${host} resolves to ${refused.address}, a private, loopback, link-local or otherwise non-public address`);
    }
    const first = addresses[0] as { address: string; family: number };
    return { address: first.address, family: first.family === 6 ? 6 : 4 };
  }
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
