import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * The addresses a restricted key may be used from, as operators give them: IPs or CIDRs, IPv4
 * or IPv6. Returns each in its canonical form (an IP as a /32 or /128), or throws naming the
 * first that is neither.
 */
export function parseAllowedAddresses(values: readonly string[]): string[] {
  return values.map((value) => {
    const text = value.trim();
    try {
      const [address, bits] = text.includes('/')
        ? ipaddr.parseCIDR(text)
        : ([ipaddr.parse(text), -1] as const);
      const prefix = bits === -1 ? (address.kind() === 'ipv4' ? 32 : 128) : bits;
      return `${address.toString()}/${prefix}`;
    } catch {
      throw new Error(`'${value}' is not an IP address or a CIDR range`);
    }
  });
}

/** Parsed ranges, once per list: a key's list is the same object for as long as it is cached. */
const compiled = new WeakMap<readonly string[], Range[]>();

/**
 * Whether a client's address (the request's, an IPv4-mapped IPv6 address taken as its IPv4) is in
 * one of the key's ranges.
 */
export function isAddressAllowed(allowed: readonly string[], address: string | undefined): boolean {
  if (address === undefined || !ipaddr.isValid(address)) return false;
  let ranges = compiled.get(allowed);
  if (ranges === undefined) {
    ranges = allowed.map((cidr) => ipaddr.parseCIDR(cidr));
    compiled.set(allowed, ranges);
  }
  const client = ipaddr.process(address);
  return ranges.some(
    ([range, bits]) => client.kind() === range.kind() && client.match(range, bits),
  );
}
