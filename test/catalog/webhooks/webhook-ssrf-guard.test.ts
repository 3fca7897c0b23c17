import {
  addressClass,
  checkWebhookUrl,
  type Resolver,
  UnresolvableUrlError,
  UnsafeUrlError,
} from '../../../services/catalog/src/webhooks/ssrf-guard';

/** A resolver that knows a few names and records what it was asked. */
function resolverOf(names: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string): Promise<string[]> => {
    asked.push(hostname);
    const addresses = names[hostname];
    if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addresses;
  };
  return Object.assign(resolve, { asked });
}

const resolve = resolverOf({
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'internal.example.com': ['10.0.0.1'],
  'split.example.com': ['93.184.215.14', '192.168.1.20'],
  'rebind.example.com': ['93.184.215.14', '::ffff:127.0.0.1'],
  'empty.example.com': [],
});

async function refusal(url: string, allowPrivate = false): Promise<Error> {
  const error = await checkWebhookUrl(url, { allowPrivate, resolve }).then(
    () => null,
    (caught: unknown) => caught as Error,
  );
  if (!error) throw new Error(`${url} was accepted`);
  return error;
}

describe('the SSRF guard of webhook URLs', () => {
  test.each([
    ['https://127.0.0.1', 'https://127.0.0.1/: 127.0.0.1 is a loopback address'],
    ['https://[::1]', 'https://[::1]/: ::1 is a loopback address'],
    [
      'https://[::ffff:127.0.0.1]',
      'https://[::ffff:7f00:1]/: ::ffff:7f00:1 is a loopback address (IPv4-mapped 127.0.0.1)',
    ],
    ['https://[fd00::1]', 'https://[fd00::1]/: fd00::1 is a unique-local address'],
    [
      'https://169.254.169.254/latest/meta-data',
      'https://169.254.169.254/latest/meta-data: 169.254.169.254 is a link-local address (the cloud metadata range)',
    ],
    ['https://0.0.0.0', 'https://0.0.0.0/: 0.0.0.0 is an unspecified address'],
    ['https://[::]', 'https://[::]/: :: is an unspecified address'],
    // WHATWG URL parsing turns these spellings of 127.0.0.1 into the dotted quad.
    ['https://0x7f.1/', 'https://127.0.0.1/: 127.0.0.1 is a loopback address'],
    ['https://2130706433/', 'https://127.0.0.1/: 127.0.0.1 is a loopback address'],
  ])('refuses the IP literal %s', async (url, message) => {
    const error = await refusal(url);
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect(error.message).toBe(message);
    expect(resolve.asked).not.toContain(new URL(url).hostname);
  });

  test('refuses a name that resolves to a private address', async () => {
    const error = await refusal('https://internal.example.com/hook');
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect(error.message).toBe('https://internal.example.com/hook: 10.0.0.1 is a private address');
  });

  test('refuses a name with a public and a private address', async () => {
    expect((await refusal('https://split.example.com')).message).toBe(
      'https://split.example.com/: 192.168.1.20 is a private address',
    );
    expect((await refusal('https://rebind.example.com')).message).toMatch(
      /::ffff:127\.0\.0\.1 is a loopback address \(IPv4-mapped 127\.0\.0\.1\)$/,
    );
  });

  test('accepts a public name and returns the addresses it checked', async () => {
    const checked = await checkWebhookUrl('https://hooks.example.com:8443/in?x=1', {
      allowPrivate: false,
      resolve,
    });
    expect(checked.url.href).toBe('https://hooks.example.com:8443/in?x=1');
    expect(checked.addresses).toEqual(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
  });

  test('accepts a public IP literal without resolving it', async () => {
    const checked = await checkWebhookUrl('https://[2606:4700::6810:84e5]/', {
      allowPrivate: false,
      resolve,
    });
    expect(checked.addresses).toEqual(['2606:4700::6810:84e5']);
  });

  test('http is refused unless private targets are allowed', async () => {
    const error = await refusal('http://hooks.example.com/');
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect(error.message).toBe('http://hooks.example.com/: the scheme must be https');
    const allowed = await checkWebhookUrl('http://127.0.0.1:9000/hook', {
      allowPrivate: true,
      resolve,
    });
    expect(allowed.addresses).toEqual(['127.0.0.1']);
  });

  test('with private targets allowed, a private name is accepted with its addresses', async () => {
    const allowed = await checkWebhookUrl('https://internal.example.com/', {
      allowPrivate: true,
      resolve,
    });
    expect(allowed.addresses).toEqual(['10.0.0.1']);
  });

  test('other schemes are refused even with private targets allowed', async () => {
    expect((await refusal('ftp://hooks.example.com/', true)).message).toBe(
      'ftp://hooks.example.com/: the scheme must be https or http',
    );
    expect((await refusal('file:///etc/passwd', true)).message).toMatch(/the scheme must be/);
  });

  test('credentials in the URL are refused', async () => {
    const error = await refusal('https://user:pass@hooks.example.com/', true);
    expect(error).toBeInstanceOf(UnsafeUrlError);
    // Named without the password: the message is answered and logged.
    expect(error.message).toBe('https://hooks.example.com/: the URL may not contain credentials');
    expect((await refusal('https://user@hooks.example.com/')).message).toMatch(/credentials/);
  });

  test('a relative or malformed URL is refused', async () => {
    expect((await refusal('/hook')).message).toBe('/hook: not an absolute URL');
    expect(await refusal('https://exa mple.com')).toBeInstanceOf(UnsafeUrlError);
  });

  test('a name that does not resolve is an UnresolvableUrlError, not an unsafe one', async () => {
    const missing = await refusal('https://missing.example.com/');
    expect(missing).toBeInstanceOf(UnresolvableUrlError);
    expect(missing).not.toBeInstanceOf(UnsafeUrlError);
    expect(missing.message).toBe(
      'https://missing.example.com/: missing.example.com does not resolve (ENOTFOUND)',
    );
    expect(await refusal('https://empty.example.com/')).toBeInstanceOf(UnresolvableUrlError);
  });

  test('the default resolver uses the system lookup', async () => {
    const error = await checkWebhookUrl('https://localhost/', { allowPrivate: false }).then(
      () => null,
      (caught: unknown) => caught as Error,
    );
    expect(error).toBeInstanceOf(UnsafeUrlError);
    expect(error?.message).toMatch(/^https:\/\/localhost\/: (127\.0\.0\.1|::1) is a loopback/);
  });
});

describe('address classes', () => {
  test.each([
    ['10.1.2.3', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.0.1', 'a private address'],
    ['127.8.9.10', 'a loopback address'],
    ['169.254.169.254', 'a link-local address (the cloud metadata range)'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['100.127.255.254', 'a carrier-grade NAT address'],
    ['224.0.0.251', 'a multicast address'],
    ['239.255.255.250', 'a multicast address'],
    ['255.255.255.255', 'a broadcast address'],
    ['0.0.0.0', 'an unspecified address'],
    ['0.1.2.3', 'a reserved address'],
    ['240.0.0.1', 'a reserved address'],
    ['198.18.0.1', 'a reserved address'],
    ['192.0.0.8', 'a reserved address'],
    ['192.0.2.1', 'a documentation address'],
    ['198.51.100.7', 'a documentation address'],
    ['203.0.113.9', 'a documentation address'],
    ['::', 'an unspecified address'],
    ['::1', 'a loopback address'],
    ['fe80::1', 'a link-local address'],
    ['fe80::1%eth0', 'a link-local address'],
    ['febf::1', 'a link-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fd12:3456::1', 'a unique-local address'],
    ['ff02::1', 'a multicast address'],
    ['2001:db8::1', 'a documentation address'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'a reserved address'],
    ['::ffff:10.0.0.1', 'a private address (IPv4-mapped 10.0.0.1)'],
    [
      '::ffff:a9fe:a9fe',
      'a link-local address (the cloud metadata range) (IPv4-mapped 169.254.169.254)',
    ],
    ['64:ff9b::7f00:1', 'a loopback address (NAT64 127.0.0.1)'],
    ['64:ff9b::192.168.1.1', 'a private address (NAT64 192.168.1.1)'],
    ['2002:7f00:1::', 'a loopback address (6to4 127.0.0.1)'],
    [
      '2002:a9fe:a9fe:1::1',
      'a link-local address (the cloud metadata range) (6to4 169.254.169.254)',
    ],
    ['::127.0.0.1', 'a reserved address'],
    ['64:ff9b:1::1', 'a reserved address'],
    ['100::1', 'a reserved address'],
    ['fec0::1', 'a reserved address'],
  ])('%s is %s', (address, name) => {
    expect(addressClass(address)).toBe(name);
  });

  test.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '169.255.0.1',
    '2606:4700::6810:84e5',
    '2a00:1450:4001:82a::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public unicast', (address) => {
    expect(addressClass(address)).toBeNull();
  });
});
