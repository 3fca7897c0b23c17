import { type Browser, chromium, type ConsoleMessage } from 'playwright-core';
import { registerKey, startStack } from '../../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/**
 * The API reference (`/docs`, Swagger UI) driven in headless Chromium (Debian's): its "Try it
 * out" must work from whatever address the page was opened at, under the page's strict CSP.
 * The gateway runs as `npm start` runs it, PUBLIC_URL unset (`http://localhost:<port>`): opened
 * at `127.0.0.1`, that address is another origin, as it is behind a port-forward.
 */
describe('API reference in Chromium', () => {
  let stack: Stack;
  let browser: Browser;
  let key: string;

  beforeAll(async () => {
    stack = await startStack();
    key = await registerKey(stack.gateway.url);
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  /** The reference page at `http://<host>:<port>/docs`, with what its console said. */
  async function openReference(host: string) {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const messages: ConsoleMessage[] = [];
    page.on('console', (message) => messages.push(message));
    const origin = `http://${host}:${stack.gateway.port}`;
    const response = await page.goto(`${origin}/docs`);
    await page.locator('.swagger-ui .opblock').first().waitFor();
    return { page, origin, response: response!, messages, close: () => context.close() };
  }

  const complaints = (messages: ConsoleMessage[]) =>
    messages
      .filter((m) => m.type() === 'error' || /content security policy/i.test(m.text()))
      .map((m) => `${m.type()}: ${m.text()}`);

  describe.each(['127.0.0.1', 'localhost'])('opened at %s', (host) => {
    test('loads under a strict CSP with nothing in the console, and links back to the portal', async () => {
      const reference = await openReference(host);
      const csp = reference.response.headers()['content-security-policy'] ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("object-src 'none'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);

      const portal = reference.page.getByRole('link', { name: 'developer portal', exact: true });
      expect(await portal.getAttribute('href')).toBe('/');
      const [opened] = await Promise.all([
        reference.page.context().waitForEvent('page'),
        portal.click(),
      ]);
      await opened!.waitForLoadState();
      expect(opened!.url()).toBe(`${reference.origin}/`);
      expect(await opened!.title()).toMatch(/^Tool Directory/);

      expect(complaints(reference.messages)).toEqual([]);
      await reference.close();
    });

    test('"Try it out" executes a real request against the page\'s own address and shows its 200', async () => {
      const reference = await openReference(host);
      const { page } = reference;

      await page.click('.swagger-ui .btn.authorize');
      await page.fill('.auth-container input[type=text]', key);
      await page.click('.auth-btn-wrapper .btn.authorize');
      await page.click('.auth-btn-wrapper .btn-done');

      const operation = page.locator('#operations-tools-listTools');
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      await operation.locator('tr[data-param-name="limit"] input').fill('2');
      await operation.locator('.btn.execute').click();

      const live = operation.locator('.live-responses-table tbody .response');
      await live.waitFor();
      expect((await live.locator('.response-col_status').innerText()).trim()).toBe('200');
      const requested = new URL(await operation.locator('.request-url pre').innerText());
      expect(requested.origin).toBe(reference.origin);
      expect(requested.pathname).toBe('/v1/tools');
      expect(requested.searchParams.get('limit')).toBe('2');
      const body = JSON.parse(
        await live.locator('.response-col_description pre').first().innerText(),
      );
      expect(body.data).toHaveLength(2);
      expect(body.meta).toMatchObject({ limit: 2, page: 1 });
      // The gateway counted it against the key: its headers are shown with the answer.
      const headers = await live
        .locator('h5', { hasText: 'Response headers' })
        .locator('xpath=following-sibling::pre')
        .innerText();
      expect(headers).toMatch(/x-ratelimit-remaining: \d+/);
      expect(headers).toMatch(/etag: "/);

      expect(complaints(reference.messages)).toEqual([]);
      await reference.close();
    });
  });
});
