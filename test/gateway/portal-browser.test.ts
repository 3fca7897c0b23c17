import { type Browser, chromium } from 'playwright-core';
import { startStack } from '../support/services';

type Stack = Awaited<ReturnType<typeof startStack>>;

/** The developer portal, driven in headless Chromium (Debian's), as a developer would use it. */
describe('developer portal in Chromium', () => {
  let stack: Stack;
  let browser: Browser;

  beforeAll(async () => {
    stack = await startStack({ QUOTA_FREE: '100', QUOTA_PRO: '5000', QUOTA_ENTERPRISE: '50000' });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  test('fill the form, get a key shown once with a copy button, call the API with it', async () => {
    const context = await browser.newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: stack.gateway.url,
    });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });

    await page.goto(stack.gateway.url);
    expect(await page.title()).toContain('Tool Directory');
    const tiers = await page.locator('#tiers tbody tr').allInnerTexts();
    expect(tiers.join('\n')).toMatch(/Free\s+100/);
    expect(tiers.join('\n')).toMatch(/Pro\s+5,000/);
    expect(tiers.join('\n')).toMatch(/Enterprise\s+50,000/);
    expect(await page.getAttribute('#api-reference-link', 'href')).toBe('/docs');

    await page.fill('#email', 'browser-user@example.com');
    await page.fill('#name', 'Browser User');
    await page.fill('#useCase', 'Trying the portal');
    await page.click('#register-button');

    await page.locator('#key-result').waitFor({ state: 'visible', timeout: 5_000 });
    const keyText = await page.locator('#api-key').textContent();
    expect(keyText).toMatch(/^tdk_[0-9A-Za-z]{38}$/);
    await expect(page.locator('.warning').textContent()).resolves.toContain('only time');

    await page.click('#copy-button');
    await page.locator('#copy-status', { hasText: 'Copied' }).waitFor();
    // Runs in the page, where `navigator` is the browser's.
    const clipboard = await page.evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
    expect(clipboard).toBe(keyText);

    await page.click('#try-button');
    await page.locator('#try-output', { hasText: /^HTTP/ }).waitFor();
    const output = (await page.locator('#try-output').textContent()) ?? '';
    expect(output).toMatch(/^HTTP 200, 99 requests left today/);
    expect(output).toContain('"attribution"');

    // The key works outside the browser too, and the page shows it only once.
    const response = await fetch(`${stack.gateway.url}/v1/tools?limit=1`, {
      headers: { 'x-api-key': keyText! },
    });
    expect(response.status).toBe(200);
    await page.reload();
    expect(await page.locator('#key-result').isHidden()).toBe(true);

    expect(consoleErrors).toEqual([]);
    await context.close();
  });

  test('a duplicate registration shows the API error on the page', async () => {
    const page = await browser.newPage();
    await page.goto(stack.gateway.url);
    await page.fill('#email', 'browser-user@example.com');
    await page.fill('#name', 'Again');
    await page.click('#register-button');
    await page.locator('#register-error').waitFor({ state: 'visible' });
    expect(await page.locator('#register-error').textContent()).toContain('already registered');
    await page.close();
  });

  test('the API reference is served from the OpenAPI document', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.gateway.url}/docs`);
    await page.locator('.swagger-ui .opblock').first().waitFor({ timeout: 10_000 });
    const operations = await page.locator('.opblock-summary-path').allInnerTexts();
    const paths = operations.map((p) => p.replace(/\u200b/g, '').trim());
    for (const path of [
      '/v1/tools',
      '/v1/tools/{slug}',
      '/v1/search',
      '/v1/categories',
      '/v1/compare/{tool1}/{tool2}',
      '/v1/register',
    ]) {
      expect(paths).toContain(path);
    }
    await page.close();
  });
});
