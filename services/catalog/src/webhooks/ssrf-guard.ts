import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Resolves a host name to every address it has (injected by tests). */
export type Resolver = (hostname: string) => Promise<string[]>;

const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * A webhook URL the catalog refuses to call (docs/api.md#webhook-events-and-deliveries): the
 * message names the reason.
 */
export class UnsafeUrlError extends Error {
  override name = 'UnsafeUrlError';
}

/**
 * The host name did not resolve. Not an UnsafeUrlError: at delivery time a failed lookup is a
 * transient failure to retry, while an unsafe address never becomes safe.
 */
export class UnresolvableUrlError extends Error {
  override name = 'UnresolvableUrlError';
}

type Family = 'ipv4' | 'ipv6';

function blockList(family: Family, subnets: string[]): BlockList {
  const list = new BlockList();
  for (const subnet of subnets) {
    const [network, prefix] = subnet.split('/');
    list.addSubnet(network!, Number(prefix), family);
  }
  return list;
}

/**
 * The non-public classes from the IANA special-purpose address registries, most specific first
 * (0.0.0.0 is "unspecified" before 0.0.0.0/8 is "reserved").
 */
const CLASSES: Record<Family, Array<[string, BlockList]>> = {
  ipv4: [
    ['an unspecified address', blockList('ipv4', ['0.0.0.0/32'])],
    ['a broadcast address', blockList('ipv4', ['255.255.255.255/32'])],
    ['a loopback address', blockList('ipv4', ['127.0.0.0/8'])],
    ['a private address', blockList('ipv4', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'])],
    ['a link-local address (the cloud metadata range)', blockList('ipv4', ['169.254.0.0/16'])],
    ['a carrier-grade NAT address', blockList('ipv4', ['100.64.0.0/10'])],
    ['a multicast address', blockList('ipv4', ['224.0.0.0/4'])],
    [
      'a documentation address',
      blockList('ipv4', ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24']),
    ],
    [
      'a reserved address',
      blockList('ipv4', [
        '0.0.0.0/8',
        '192.0.0.0/24',
        '192.88.99.0/24',
        '198.18.0.0/15',
        '240.0.0.0/4',
      ]),
    ],
  ],
  ipv6: [
    ['an unspecified address', blockList('ipv6', ['::/128'])],
    ['a loopback address', blockList('ipv6', ['::1/128'])],
    ['a link-local address', blockList('ipv6', ['fe80::/10'])],
    ['a unique-local address', blockList('ipv6', ['fc00::/7'])],
    ['a multicast address', blockList('ipv6', ['ff00::/8'])],
    ['a documentation address', blockList('ipv6', ['2001:db8::/32', '3fff::/20'])],
    // Within global unicast: IETF protocol assignments (Teredo, benchmarking, ORCHID...).
    ['a reserved address', blockList('ipv6', ['2001::/23'])],
  ],
};

/** Outside 2000::/3 nothing is public unicast: what has no class of its own is "reserved". */
const GLOBAL_UNICAST_V6 = blockList('ipv6', ['2000::/3']);

/** IPv6 ranges that carry an IPv4 address, and where it sits (as 16-bit word indexes). */
const EMBEDDINGS: Array<[string, BlockList, number]> = [
  ['IPv4-mapped', blockList('ipv6', ['::ffff:0:0/96']), 6],
  ['NAT64', blockList('ipv6', ['64:ff9b::/96']), 6],
  ['6to4', blockList('ipv6', ['2002::/16']), 1],
];

/** Why `address` is not a public unicast address ("a loopback address"), or null when it is. */
export function addressClass(address: string): string | null {
  const family: Family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
  if (family === 'ipv6') {
    for (const [embedding, range, at] of EMBEDDINGS) {
      if (!range.check(address, 'ipv6')) continue;
      const words = ipaddr.IPv6.parse(address).parts;
      const high = words[at]!;
      const low = words[at + 1]!;
      const ipv4 = [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
      const embedded = addressClass(ipv4);
      return embedded && `${embedded} (${embedding} ${ipv4})`;
    }
  }
  for (const [name, list] of CLASSES[family]) {
    if (list.check(address, family)) return name;
  }
  if (family === 'ipv6' && !GLOBAL_UNICAST_V6.check(address, 'ipv6')) return 'a reserved address';
  return null;
}

/**
 * Checks a webhook URL (docs/api.md#webhook-events-and-deliveries) and returns the addresses it was
 * checked against: the delivery connects to one of those, so a second DNS answer cannot swap in a
 * private address.
 */
export async function checkWebhookUrl(
  url: string,
  options: { allowPrivate: boolean; resolve?: Resolver },
): Promise<{ url: URL; addresses: string[] }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsafeUrlError(`${url}: not an absolute URL`);
  }
  const schemes = options.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(parsed.protocol)) {
    throw new UnsafeUrlError(
      `${parsed.href}: the scheme must be ${options.allowPrivate ? 'https or http' : 'https'}`,
    );
  }
  if (parsed.username || parsed.password) {
    // Named without them: the message is answered and logged.
    const named = new URL(parsed.href);
    named.username = '';
    named.password = '';
    throw new UnsafeUrlError(`${named.href}: the URL may not contain credentials`);
  }
  // WHATWG URL has already normalised IPv4 literals (0x7f.1, 2130706433) to dotted quads.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host) ? [host] : await lookup(parsed, host, options.resolve);
  if (!options.allowPrivate) {
    for (const address of addresses) {
      const unsafe = addressClass(address);
      if (unsafe) throw new UnsafeUrlError(`${parsed.href}: ${address} is ${unsafe}`);
    }
  }
  return { url: parsed, addresses };
}

async function lookup(url: URL, host: string, resolve = systemResolver): Promise<string[]> {
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new UnresolvableUrlError(`${url.href}: ${host} does not resolve (${reason})`, {
      cause: error,
    });
  }
  if (addresses.length === 0) {
    throw new UnresolvableUrlError(`${url.href}: ${host} does not resolve`);
  }
  return addresses;
}
