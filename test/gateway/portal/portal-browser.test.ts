import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { freePort } from '../../support/ports';
import { keyedGet, keysCli, startStack, tempDataDir } from '../../support/services';
import { within } from '../../support/waits';

type Stack = Awaited<ReturnType<typeof startStack>>;

const run = promisify(execFile);
const SCREENSHOTS = path.resolve(__dirname, '..', '..', '..', 'test-output');

const VIEWPORTS: { name: string; options: BrowserContextOptions }[] = [
  { name: 'desktop', options: { viewport: { width: 1280, height: 800 } } },
  {
    name: 'phone',
    options: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true },
  },
];

/** The developer portal, driven in headless Chromium (Debian's), as a developer would use it. */
describe('developer portal in Chromium', () => {
  let stack: Stack;
  let browser: Browser;
  // The examples must name PUBLIC_URL, not the address the browser used: the two differ here.
  let publicUrl: string;
  let registrations = 0;
  // The gateway's key store, shared with the keys CLI.
  const storeEnv = { DATA_DIR: tempDataDir() };

  beforeAll(async () => {
    const port = await freePort();
    publicUrl = `http://localhost:${port}`;
    stack = await startStack({
      ...storeEnv,
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      QUOTA_FREE: '250',
      QUOTA_PRO: '7500',
      QUOTA_ENTERPRISE: '60000',
    });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    mkdirSync(SCREENSHOTS, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await stack.stop();
  });

  /** A fresh browser context on the portal, recording what the page asks for and complains of. */
  async function openPortal(options: BrowserContextOptions = {}) {
    const context = await browser.newContext(options);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: stack.gateway.url,
    });
    // A missing element fails the test in seconds, with its selector, not at Jest's timeout.
    context.setDefaultTimeout(5_000);
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    const requests: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('request', (request) => requests.push(request.url()));
    const response = await page.goto(stack.gateway.url);
    return {
      page,
      response: response!,
      consoleErrors,
      requests,
      registerRequests: () => requests.filter((url) => new URL(url).pathname === '/v1/register'),
      close: () => context.close(),
    };
  }

  async function horizontalOverflow(page: Page): Promise<number> {
    return page.evaluate(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
  }

  async function clipboard(page: Page): Promise<string> {
    // Runs in the page, where `navigator` is the browser's.
    return page.evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
  }

  /** A key registered through the API, not the page. */
  async function registerViaApi(label: string): Promise<string> {
    registrations += 1;
    const response = await fetch(`${stack.gateway.url}/v1/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `${label}-${registrations}@example.com`, name: label }),
    });
    return ((await response.json()) as { apiKey: string }).apiKey;
  }

  /** A key's roll through the API: status and body. */
  async function rollViaApi(key: string, graceSeconds: number) {
    const response = await fetch(`${stack.gateway.url}/v1/keys/roll`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ graceSeconds }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  /** Pastes a key into Your key and asks for it. */
  async function pasteKey(page: Page, key: string) {
    await page.fill('#my-key', key);
    await page.click('#my-key-button');
  }

  /** The x-api-key of every request the page sends to these paths, in order. */
  function sentKeys(page: Page, pathname: string): string[] {
    const keys: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === pathname) keys.push(request.headers()['x-api-key']!);
    });
    return keys;
  }

  async function fillForm(page: Page, email: string, name: string) {
    await page.fill('#email', email);
    await page.fill('#name', name);
  }

  describe.each(VIEWPORTS)('at $name width', ({ name, options }) => {
    test('the page fits, loads nothing from elsewhere, and states tiers, examples and what to do about a lost key', async () => {
      const portal = await openPortal(options);
      const { page } = portal;

      expect(portal.response.headers()['content-security-policy']).toContain("default-src 'self'");
      expect(await page.title()).toMatch(/^Tool Directory/);
      expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);

      const tiers = await page.locator('#tiers').innerText();
      expect(await page.locator('#tier-free').innerText()).toContain('250');
      expect(await page.locator('#tier-pro').innerText()).toContain('7,500');
      expect(await page.locator('#tier-pro').innerText()).toContain('/compare');
      expect(await page.locator('#tier-enterprise').innerText()).toContain('60,000');
      expect(await page.locator('#tier-enterprise').innerText()).toMatch(
        /\/export[\s\S]*webhooks/i,
      );
      expect(tiers).not.toContain('{{');

      const lostKey = await page.locator('#lost-key').innerText();
      expect(lostKey).toMatch(/cannot be recovered/i);
      expect(lostKey).toMatch(/another email/i);
      expect(lostKey).toMatch(/revoke/i);
      // A key that still works is rolled, not re-registered.
      expect(lostKey).toContain('POST /v1/keys/roll');
      expect(lostKey).toMatch(/graceSeconds/);

      expect(await page.getAttribute('#api-reference-link', 'href')).toBe('/docs');
      expect(await page.getByLabel('Email').getAttribute('id')).toBe('email');
      expect(await page.getByLabel('Name').getAttribute('id')).toBe('name');

      // Before registering the examples carry a placeholder, and already the public address.
      const curl = await page.locator('#example-curl').innerText();
      expect(curl).toContain(`'${publicUrl}/v1/tools?limit=3'`);
      expect(curl).toContain('YOUR_API_KEY');
      const js = await page.locator('#example-js').innerText();
      expect(js).toContain(`fetch("${publicUrl}/v1/tools?limit=3"`);

      await page.screenshot({ path: path.join(SCREENSHOTS, `portal-${name}.png`), fullPage: true });
      const origins = new Set(portal.requests.map((url) => new URL(url).origin));
      expect([...origins]).toEqual([stack.gateway.url]);
      expect(portal.consoleErrors).toEqual([]);
      await portal.close();
    });

    test('an empty, blank or invalid form is stopped by the browser and spends no registration until it is valid', async () => {
      const portal = await openPortal(options);
      const { page } = portal;
      const validity = (selector: string) =>
        page.locator(selector).evaluate((input) => ({
          valueMissing: input.validity.valueMissing,
          typeMismatch: input.validity.typeMismatch,
          patternMismatch: input.validity.patternMismatch,
        }));

      await page.click('#register-button');
      expect((await validity('#email')).valueMissing).toBe(true);

      await fillForm(page, 'not-an-email', 'Someone');
      await page.click('#register-button');
      expect((await validity('#email')).typeMismatch).toBe(true);

      await fillForm(page, 'blank-name@example.com', '   ');
      await page.click('#register-button');
      expect((await validity('#name')).patternMismatch).toBe(true);
      expect(await page.locator('#register-form').isVisible()).toBe(true);

      // Requests leave in order: once a valid submit is answered, none sent before it is missed.
      registrations += 1;
      await fillForm(page, `valid-after-${name}-${registrations}@example.com`, 'Someone');
      await page.click('#register-button');
      await page.locator('#key-result').waitFor({ state: 'visible' });
      expect(portal.registerRequests()).toHaveLength(1);
      await portal.close();
    });

    test('registering hides the form, shows the key once with a copy button, and the copied examples work', async () => {
      const portal = await openPortal(options);
      const { page } = portal;
      registrations += 1;
      await fillForm(page, `browser-${name}-${registrations}@example.com`, 'Browser User');
      await page.fill('#useCase', 'Trying the portal');
      // Focus is recorded as it moves: when the answer comes between the double click's two
      // presses, the second press lands on the shown key and takes focus back to the page.
      await page.evaluate(
        `window.focused = [];
         document.addEventListener('focusin', (event) => window.focused.push(event.target.id));`,
      );
      // A double click must not spend two of the hourly registrations.
      await page.dblclick('#register-button');

      await page.locator('#key-result').waitFor({ state: 'visible', timeout: within(0) });
      const key = (await page.locator('#api-key').innerText()).trim();
      expect(key).toMatch(/^tdk_[0-9A-Za-z]{38}$/);
      expect(await page.locator('#key-result').innerText()).toMatch(/only time/i);

      // The form is gone, not merely out of sight: nothing there to click.
      expect(await page.locator('#register-form').isVisible()).toBe(false);
      await expect(
        page.locator('#register-button').click({ trial: true, timeout: 1_000 }),
      ).rejects.toThrow();
      expect(portal.registerRequests()).toHaveLength(1);
      // Keyboard and screen-reader users are taken to the key as it appears.
      expect(await page.evaluate('window.focused')).toContain('key-heading');

      await page.click('#copy-key');
      await page.locator('#copy-key', { hasText: 'Copied' }).waitFor();
      expect(await clipboard(page)).toBe(key);

      await page.click('#try-button');
      await page.locator('#try-output', { hasText: /^HTTP/ }).waitFor();
      const output = await page.locator('#try-output').innerText();
      expect(output).toMatch(/^HTTP 200, 249 requests left today/);
      expect(output).toContain('"attribution"');
      expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
      await page.screenshot({
        path: path.join(SCREENSHOTS, `portal-${name}-key.png`),
        fullPage: true,
      });

      // The examples now carry the key; copied from the page they run as they are.
      await page.click('#copy-curl');
      const curl = await clipboard(page);
      expect(curl).toBe(await page.locator('#example-curl').innerText());
      expect(curl).toContain(key);
      // zsh's default: an unmatched glob (an unquoted `?`) is an error, not a literal.
      const shell = await run('bash', ['-O', 'failglob', '-c', curl], {
        cwd: mkdtempSync(path.join(tmpdir(), 'portal-shell-')),
      });
      expect(shell.stdout).toMatch(/^HTTP\/1\.1 200/);
      expect(shell.stdout).toMatch(/^x-ratelimit-remaining: 248\r?$/im);

      await page.click('#copy-js');
      const js = await clipboard(page);
      expect(js).toContain(key);
      const node = await run(process.execPath, ['--input-type=module', '-e', js]);
      expect(node.stdout).toMatch(/^200 247\n/);

      // Shown once: a reload brings back the form, not the key.
      await page.reload();
      expect(await page.locator('#key-result').isHidden()).toBe(true);
      expect(await page.locator('#register-form').isVisible()).toBe(true);
      expect(await page.locator('#example-curl').innerText()).not.toContain(key);

      expect(portal.consoleErrors).toEqual([]);
      await portal.close();
    });

    test('Your key: a restricted key pasted shows its tier, limit, end, scopes, addresses and creation; a roll with an hour of grace shows the new key once, then the new key is the one shown', async () => {
      registrations += 1;
      const created = (await keysCli(
        [
          'create',
          ...['--tier', 'pro', '--email', `restricted-${name}-${registrations}@example.com`],
          ...['--name', 'Restricted', '--scopes', 'catalog:read,usage,keys:roll'],
          ...['--expires-in', '30d', '--allow-ips', '127.0.0.0/8'],
        ],
        storeEnv,
      )) as { apiKey: string; keyId: string; expiresAt: string };
      const portal = await openPortal(options);
      const { page } = portal;
      const usageKeys = sentKeys(page, '/v1/usage');
      const logged: string[] = [];
      page.on('console', (message) => logged.push(message.text()));

      // Keyboard only: Enter in the field asks for the key.
      await page.fill('#my-key', created.apiKey);
      await page.press('#my-key', 'Enter');
      await page.locator('#key-view').waitFor({ state: 'visible' });
      expect(await page.locator('#detail-key-id').innerText()).toBe(created.keyId);
      expect(await page.locator('#detail-tier').innerText()).toBe('Pro: 7,500 requests a day');
      const end = `${created.expiresAt.slice(0, 16).replace('T', ' ')} UTC`;
      expect(await page.locator('#detail-expires').innerText()).toBe(`${end} (in 30 days)`);
      expect(await page.locator('#detail-scopes').innerText()).toBe(
        'catalog:read, usage, keys:roll',
      );
      expect(await page.locator('#detail-addresses').innerText()).toBe('127.0.0.0/8');
      expect(await page.locator('#detail-last-used').innerText()).toMatch(/^never/);
      expect(await page.locator('#usage-summary').innerText()).toMatch(
        /^0 of 7500 requests used today \(pro tier\)/,
      );
      const events = page.locator('#key-events li');
      expect(await events.count()).toBe(1);
      expect(await events.first().getAttribute('data-type')).toBe('created');
      expect(await events.first().innerText()).toMatch(
        new RegExp(
          `^Created on the Pro tier; ending ${end}; scopes catalog:read, usage, keys:roll; from 127\\.0\\.0\\.0/8\\s+` +
            `\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC, by the operator$`,
        ),
      );
      expect(await page.locator('#my-key-status').innerText()).toContain(created.keyId);
      expect(await page.locator('#rolled').isHidden()).toBe(true);
      expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);

      // "None" warns before anything happens; an hour does not.
      await page.getByLabel('None: it stops at once').check();
      expect(await page.locator('#roll-none-warning').isVisible()).toBe(true);
      await page.getByLabel('1 hour').check();
      expect(await page.locator('#roll-none-warning').isHidden()).toBe(true);
      await page.focus('#roll-button');
      const rolledAt = Date.now();
      await page.keyboard.press('Enter');

      await page.locator('#rolled').waitFor({ state: 'visible' });
      const newKey = (await page.locator('#rolled-key').innerText()).trim();
      expect(newKey).toMatch(/^tdk_[0-9A-Za-z]{38}$/);
      expect(newKey).not.toBe(created.apiKey);
      const rolledText = await page.locator('#rolled').innerText();
      expect(rolledText).toMatch(/only time the new key is shown/);
      const until = /The secret you pasted works until (\S+ \S+) UTC/.exec(rolledText)?.[1];
      expect(Date.parse(`${until!.replace(' ', 'T')}Z`)).toBeGreaterThan(rolledAt + 3_500_000);
      expect(Date.parse(`${until!.replace(' ', 'T')}Z`)).toBeLessThan(rolledAt + 3_700_000);
      // Keyboard and screen-reader users are taken to the new key.
      expect(await page.evaluate('document.activeElement.id')).toBe('rolled-heading');

      // The section now holds the new key: its roll listed first, made by the key's holder from
      // this address, and the unit the roll took counted.
      const rolled = page.locator('#key-events li[data-type="rolled"]');
      await rolled.waitFor();
      expect(await events.count()).toBe(2);
      expect(await events.first().getAttribute('data-type')).toBe('rolled');
      expect(await rolled.getAttribute('data-by')).toBe('self');
      expect(await rolled.innerText()).toMatch(
        /^Rolled: the secret before works until .+ UTC\s+.+ UTC, by the key’s holder from 127\.0\.0\.1$/,
      );
      expect(await page.locator('#usage-summary').innerText()).toMatch(
        /^1 of 7500 requests used today \(pro tier\)/,
      );
      expect(await page.locator('#detail-expires').innerText()).toBe(`${end} (in 30 days)`);
      expect(usageKeys).toEqual([created.apiKey, newKey]);
      expect(await page.inputValue('#my-key')).toBe(newKey);

      await page.click('#copy-rolled-key');
      await page.locator('#copy-rolled-key', { hasText: 'Copied' }).waitFor();
      expect(await clipboard(page)).toBe(newKey);
      expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
      await page.screenshot({
        path: path.join(SCREENSHOTS, `portal-${name}-your-key.png`),
        fullPage: true,
      });

      // Both secrets work: the old one for its hour.
      expect((await keyedGet(stack.gateway.url, newKey, '/v1/usage')).status).toBe(200);
      expect((await keyedGet(stack.gateway.url, created.apiKey, '/v1/usage')).status).toBe(200);

      // Shown once: asking again takes the new key off the page.
      await page.click('#my-key-button');
      await page.locator('#rolled').waitFor({ state: 'hidden' });
      expect(await page.locator('#rolled-key').textContent()).toBe('');

      // Neither key was stored, put in a URL or logged.
      expect(await page.evaluate('localStorage.length + sessionStorage.length')).toBe(0);
      for (const text of [page.url(), ...portal.requests, ...logged]) {
        expect(text).not.toContain(created.apiKey);
        expect(text).not.toContain(newKey);
      }
      expect(portal.consoleErrors).toEqual([]);
      await portal.close();
    });
  });

  test('a second registration for an email shows the API error and points to the lost-key advice', async () => {
    const email = 'taken@example.com';
    const first = await fetch(`${stack.gateway.url}/v1/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, name: 'First' }),
    });
    expect(first.status).toBe(201);

    const portal = await openPortal();
    await fillForm(portal.page, email, 'Again');
    await portal.page.click('#register-button');
    const error = portal.page.locator('#register-error');
    await error.waitFor({ state: 'visible' });
    expect(await error.innerText()).toContain('already registered');
    expect(await error.locator('a').getAttribute('href')).toBe('#lost-key');
    expect(await portal.page.locator('#register-form').isVisible()).toBe(true);
    await portal.close();
  });

  /**
   * Counts, in a PNG of the usage chart, the columns holding the bars' colour (the portal's
   * --brand, #4338ca), and how tall the tallest column is: decoded by the browser itself on a
   * blank page (a canvas), so the test needs no image library.
   */
  async function barPixels(png: Buffer) {
    const page = await browser.newPage();
    try {
      // In the page, where the DOM is (a string: this file is compiled without the DOM's types).
      return (await page.evaluate(`(async () => {
        const image = new Image();
        image.src = 'data:image/png;base64,${png.toString('base64')}';
        await image.decode();
        const canvas = document.createElement('canvas');
        canvas.width = image.width;
        canvas.height = image.height;
        const context = canvas.getContext('2d');
        context.drawImage(image, 0, 0);
        const { data, width, height } = context.getImageData(0, 0, image.width, image.height);
        const near = (i) =>
          Math.abs(data[i] - 0x43) < 40 &&
          Math.abs(data[i + 1] - 0x38) < 40 &&
          Math.abs(data[i + 2] - 0xca) < 40;
        const columns = [];
        for (let x = 0; x < width; x++) {
          let filled = 0;
          for (let y = 0; y < height; y++) if (near((y * width + x) * 4)) filled += 1;
          columns.push(filled);
        }
        return { width, height, columns };
      })()`)) as { width: number; height: number; columns: number[] };
    } finally {
      await page.close();
    }
  }

  test('the usage view: a key pasted, today, the limit, the reset, a bar chart and a table', async () => {
    const key = await registerViaApi('usage');
    for (let i = 0; i < 12; i++) {
      const response = await fetch(`${stack.gateway.url}/v1/categories`, {
        headers: { 'x-api-key': key },
      });
      await response.arrayBuffer();
    }
    const portal = await openPortal({ viewport: { width: 1280, height: 800 } });
    const { page } = portal;
    // Invalid keys are stopped by the form itself.
    await page.fill('#my-key', 'not-a-key');
    await page.click('#my-key-button');
    expect(await page.locator('#usage-result').isHidden()).toBe(true);

    await page.fill('#my-key', key);
    await page.click('#my-key-button');
    await page.locator('#usage-result').waitFor({ state: 'visible' });
    const summary = await page.locator('#usage-summary').innerText();
    expect(summary).toMatch(/^12 of 250 requests used today \(free tier\), 238 left/);
    expect(summary).toMatch(/resets at \d{4}-\d{2}-\d{2}T00:00:00\.000Z/);
    // A text alternative: the table, today first, 30 days.
    // (Folded away under its summary: read as text, not as rendered.)
    expect(await page.locator('#usage-table tbody tr').count()).toBe(30);
    const today = await page.locator('#usage-table tbody tr:first-child td').allTextContents();
    expect(today).toEqual([expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), '12']);
    await page.click('#usage-result summary');
    expect(await page.locator('#usage-table').isVisible()).toBe(true);
    expect(await page.locator('#usage-chart').getAttribute('role')).toBe('img');
    expect(await page.locator('#usage-chart rect.usage-bar').count()).toBe(1);

    const chart = page.locator('#usage-chart');
    const png = await chart.screenshot({ path: path.join(SCREENSHOTS, 'portal-usage-chart.png') });
    const { width, height, columns } = await barPixels(png);
    const filled = columns.flatMap((count, x) => (count > 0 ? [x] : []));
    // One bar, today's, in the rightmost thirtieth of the chart; nothing elsewhere.
    expect(filled.length).toBeGreaterThan(width / 60);
    expect(Math.min(...filled)).toBeGreaterThan((width * 29) / 30 - 2);
    // 12 of 250 requests: a bar a few percent of the plot's height, not a full one.
    const tallest = Math.max(...columns);
    expect(tallest).toBeGreaterThan(1);
    expect(tallest).toBeLessThan(height * 0.2);
    // The view spent no unit of the key: its own request took none.
    const after = await fetch(`${stack.gateway.url}/v1/usage`, { headers: { 'x-api-key': key } });
    expect(((await after.json()) as { data: { used: number } }).data.used).toBe(12);
    expect(portal.consoleErrors).toEqual([]);
    await portal.close();
  });

  test('beside the usage, the key’s most searched queries and those that found nothing', async () => {
    const key = await registerViaApi('searches');
    for (const q of ['Vector database', 'vector  DATABASE', 'qqzx finds nothing']) {
      const response = await fetch(`${stack.gateway.url}/v1/search?q=${encodeURIComponent(q)}`, {
        headers: { 'x-api-key': key },
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const portal = await openPortal({ viewport: { width: 1280, height: 800 } });
    const { page } = portal;
    await page.fill('#my-key', key);
    await page.click('#my-key-button');
    await page.locator('#searches-result').waitFor({ state: 'visible' });
    expect(await page.locator('#searches-summary').innerText()).toBe(
      '3 searches, 1 of them found nothing.',
    );
    expect(await page.locator('#search-top li').allTextContents()).toEqual([
      'vector database (2)',
      'qqzx finds nothing (1)',
    ]);
    expect(await page.locator('#search-no-hit li').allTextContents()).toEqual([
      'qqzx finds nothing (1)',
    ]);
    expect(portal.consoleErrors).toEqual([]);
    await portal.close();
  });

  test('Your key shows every error in the API’s words: a previous secret cannot roll (403), an ended or unknown secret is refused (401)', async () => {
    const key = await registerViaApi('previous');
    const first = await rollViaApi(key, 3600);
    expect(first.status).toBe(201);
    const current = first.body.apiKey!;
    const portal = await openPortal();
    const { page } = portal;

    // The previous secret still reads its key in its grace, but cannot roll it.
    await pasteKey(page, key);
    await page.locator('#key-view').waitFor({ state: 'visible' });
    await page.click('#roll-button');
    const rollError = page.locator('#roll-error');
    await rollError.waitFor({ state: 'visible' });
    const refused = await rollViaApi(key, 86_400);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(
      /^This secret is being replaced \(it works until \S+\) and cannot manage the key; use the key's current secret$/,
    );
    expect(await rollError.innerText()).toBe(refused.body.error);
    expect(await page.locator('#rolled').isHidden()).toBe(true);

    // The current secret rolls with no grace, after the warning: it ends at once.
    await pasteKey(page, current);
    await rollError.waitFor({ state: 'hidden' });
    await page.getByLabel('None: it stops at once').check();
    expect(await page.locator('#roll-none-warning').innerText()).toMatch(/stops working/);
    await page.click('#roll-button');
    await page.locator('#rolled').waitFor({ state: 'visible' });
    expect(await page.locator('#rolled-previous').innerText()).toBe(
      'The secret you pasted stopped working at once.',
    );
    await page.locator('#key-events li[data-type="rolled"] >> nth=1').waitFor();
    const rolls = await page
      .locator('#key-events li[data-type="rolled"] .event-what')
      .allInnerTexts();
    // The second roll ended the first one's hour of grace.
    expect(rolls).toEqual([
      'Rolled: the secret before stopped at once',
      expect.stringMatching(/^Rolled: the secret before worked until \S+ \S+ UTC$/),
    ]);

    // The secret that ended is refused, saying why; the view of the key is gone.
    await pasteKey(page, current);
    const keyError = page.locator('#my-key-error');
    await keyError.waitFor({ state: 'visible' });
    const ended = await keyedGet(stack.gateway.url, current, '/v1/usage');
    expect(ended.status).toBe(401);
    expect(ended.body.error).toMatch(/^The API key is invalid: it was replaced by a roll at /);
    expect(await keyError.innerText()).toBe(ended.body.error);
    expect(await page.locator('#key-view').isHidden()).toBe(true);

    // A key that never was: the plain 401.
    await pasteKey(page, `tdk_${'A'.repeat(38)}`);
    await page.locator('#my-key-error', { hasText: /^The API key is invalid$/ }).waitFor();
    expect(await page.locator('#key-view').isHidden()).toBe(true);
    await portal.close();
  });

  test('Your key shows a roll past the quota as the 429 the API answered', async () => {
    const key = await registerViaApi('quota');
    // The day's 250 units spent, ten at a time.
    for (let i = 0; i < 25; i++) {
      await Promise.all(
        Array.from({ length: 10 }, () =>
          keyedGet(stack.gateway.url, key, '/v1/categories').then(({ status }) =>
            expect(status).toBe(200),
          ),
        ),
      );
    }
    const portal = await openPortal();
    const { page } = portal;
    await pasteKey(page, key);
    await page.locator('#key-view').waitFor({ state: 'visible' });
    expect(await page.locator('#usage-summary').innerText()).toMatch(
      /^250 of 250 requests used today \(free tier\), 0 left/,
    );
    await page.click('#roll-button');
    const rollError = page.locator('#roll-error');
    await rollError.waitFor({ state: 'visible' });
    expect(await rollError.innerText()).toMatch(
      /^Daily quota of the Free tier \(250 requests\) exceeded; it resets at \S+$/,
    );
    expect(await page.locator('#rolled').isHidden()).toBe(true);
    // The refused roll changed nothing: the key still works, unrolled.
    const events = await keyedGet(stack.gateway.url, key, '/v1/keys/events');
    expect(events.body.data.map((event: { type: string }) => event.type)).toEqual(['created']);
    await portal.close();
  });

  test('a key just registered opens under Your key', async () => {
    const portal = await openPortal();
    const { page } = portal;
    registrations += 1;
    await fillForm(page, `open-${registrations}@example.com`, 'Opener');
    await page.click('#register-button');
    await page.locator('#key-result').waitFor({ state: 'visible' });
    const key = (await page.locator('#api-key').innerText()).trim();
    const usageKeys = sentKeys(page, '/v1/usage');

    await page.click('#open-my-key');
    await page.locator('#key-view').waitFor({ state: 'visible' });
    expect(await page.evaluate('document.activeElement.id')).toBe('your-key-heading');
    expect(usageKeys).toEqual([key]);
    expect(await page.locator('#detail-tier').innerText()).toBe('Free: 250 requests a day');
    expect(await page.locator('#detail-expires').innerText()).toBe('never expires');
    expect(await page.locator('#detail-scopes').innerText()).toBe(
      'unrestricted: everything the Free tier allows',
    );
    expect(await page.locator('#detail-addresses').innerText()).toBe('unrestricted: any address');
    const created = page.locator('#key-events li');
    expect(await created.count()).toBe(1);
    expect(await created.getAttribute('data-type')).toBe('created');
    expect(await created.innerText()).toMatch(
      /^Created on the Free tier\s+.+ UTC, by the key’s holder from 127\.0\.0\.1$/,
    );
    expect(portal.consoleErrors).toEqual([]);
    await portal.close();
  });

  test('the API reference is served from the OpenAPI document', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.gateway.url}/docs`);
    await page
      .locator('.swagger-ui .opblock')
      .first()
      .waitFor({ timeout: within(0) });
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
