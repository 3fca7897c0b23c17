// Developer portal: registers for a key, shows it once, fills it into the examples, copies;
// shows a pasted key's details, use and changes, and rolls it.
/* global setTimeout */
(function () {
  const PLACEHOLDER = 'YOUR_API_KEY';
  const byId = (id) => document.getElementById(id);
  const form = byId('register-form');
  const submitButton = byId('register-button');
  const errorBox = byId('register-error');
  const copyStatus = byId('copy-status');
  let apiKey = '';

  function showError(message, lostKeyHint) {
    errorBox.textContent = message;
    if (lostKeyHint) {
      const link = document.createElement('a');
      link.href = '#lost-key';
      link.textContent = 'Lost your key?';
      errorBox.append(' ', link);
    }
    errorBox.hidden = false;
  }

  function showKey(key) {
    apiKey = key;
    byId('my-key').value = key;
    byId('api-key').textContent = key;
    for (const id of ['example-curl', 'example-js']) {
      byId(id).textContent = byId(id).textContent.replace(PLACEHOLDER, key);
    }
    byId('examples-note').textContent = 'Your new key is filled in: copy and run.';
    byId('register-step').hidden = true;
    byId('key-result').hidden = false;
    byId('key-heading').focus();
  }

  // The browser's own validation runs first: an invalid form never gets here, so it spends
  // none of the registrations each address is allowed per hour.
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (submitButton.disabled) return;
    const label = submitButton.textContent;
    submitButton.disabled = true;
    submitButton.textContent = 'Creating your key…';
    errorBox.hidden = true;
    try {
      const response = await fetch('/v1/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          email: form.elements.email.value.trim(),
          name: form.elements.name.value.trim(),
          useCase: form.elements.useCase.value.trim(),
        }),
      });
      const payload = await response.json().catch(() => ({}));
      if (response.ok) return showKey(payload.apiKey);
      let message = payload.error || `Registration failed (HTTP ${response.status})`;
      const retryAfter = Number(response.headers.get('retry-after'));
      if (response.status === 429 && retryAfter > 0) {
        message += `. Try again in ${Math.ceil(retryAfter / 60)} min.`;
      }
      showError(message, response.status === 409);
    } catch (err) {
      showError(`Could not reach the server: ${err.message}`);
    } finally {
      submitButton.disabled = false;
      submitButton.textContent = label;
    }
  });

  function announce(button, text) {
    button.dataset.label ??= button.textContent;
    button.textContent = text;
    copyStatus.textContent = text;
    setTimeout(() => (button.textContent = button.dataset.label), 2000);
  }

  // The Clipboard API needs a secure context (HTTPS or localhost); elsewhere the text is
  // selected and copied the older way, or left selected for Ctrl+C.
  async function copy(button) {
    const source = byId(button.dataset.copy);
    try {
      await navigator.clipboard.writeText(source.textContent);
      return announce(button, 'Copied');
    } catch {
      const range = document.createRange();
      range.selectNodeContents(source);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      announce(button, document.execCommand('copy') ? 'Copied' : 'Press Ctrl+C');
    }
  }
  for (const button of document.querySelectorAll('[data-copy]')) {
    button.addEventListener('click', () => copy(button));
  }

  const SVG = 'http://www.w3.org/2000/svg';
  const CHART = { width: 300, height: 100, top: 8 };

  function svgElement(name, attributes) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    return element;
  }

  // Bars of the last 30 days, oldest on the left, scaled to the busiest day or the limit,
  // whichever is higher, with the limit drawn as a line.
  function drawChart(history, limit) {
    const chart = byId('usage-chart');
    chart.replaceChildren();
    const days = [...history].reverse();
    const top = Math.max(limit, ...days.map((day) => day.used), 1);
    const slot = CHART.width / days.length;
    const scale = (CHART.height - CHART.top) / top;
    days.forEach((day, i) => {
      if (day.used === 0) return;
      const height = Math.max(1, day.used * scale);
      const bar = svgElement('rect', {
        class: 'usage-bar',
        x: String(i * slot + slot * 0.15),
        y: String(CHART.height - height),
        width: String(slot * 0.7),
        height: String(height),
      });
      bar.append(svgElement('title', {}));
      bar.firstChild.textContent = `${day.date}: ${day.used} requests`;
      chart.append(bar);
    });
    const limitY = String(CHART.height - limit * scale);
    chart.append(
      svgElement('line', {
        class: 'usage-limit',
        x1: '0',
        x2: String(CHART.width),
        y1: limitY,
        y2: limitY,
      }),
    );
  }

  const TIER_NAMES = { free: 'Free', pro: 'Pro', enterprise: 'Enterprise' };
  const tierName = (tier) => TIER_NAMES[tier] ?? tier;

  // UTC to the minute: the precision the API keeps of a last use, and the same for every reader.
  const when = (iso) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

  function timeElement(iso) {
    const time = document.createElement('time');
    time.dateTime = iso;
    time.textContent = when(iso);
    return time;
  }

  function fromNow(iso) {
    const minutes = Math.max(0, Math.round((Date.parse(iso) - Date.now()) / 60_000));
    if (minutes >= 2 * 24 * 60) return `in ${Math.round(minutes / (24 * 60))} days`;
    if (minutes >= 120) return `in ${Math.round(minutes / 60)} hours`;
    return `in ${minutes} minutes`;
  }

  /** Values as code, comma-separated. */
  function codeList(values) {
    return values.flatMap((value, i) => {
      const code = document.createElement('code');
      code.textContent = value;
      return i === 0 ? [code] : [', ', code];
    });
  }

  function showUsage({ used, limit, remaining, resetAt, tier, history }) {
    const hours = Math.max(0, Math.round((Date.parse(resetAt) - Date.now()) / 3_600_000));
    byId('usage-summary').textContent =
      `${used} of ${limit} requests used today (${tier} tier), ${remaining} left; ` +
      `the count resets at ${resetAt} (in about ${hours} h).`;
    drawChart(history, limit);
    const rows = history.map((day) => {
      const row = document.createElement('tr');
      for (const text of [day.date, String(day.used)]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.append(cell);
      }
      return row;
    });
    byId('usage-table').tBodies[0].replaceChildren(...rows);
  }

  function showDetails({ keyId, tier, limit, expiresAt, lastUsedAt, scopes, allowedAddresses }) {
    byId('detail-key-id').replaceChildren(...codeList([keyId]));
    byId('detail-tier').textContent =
      `${tierName(tier)}: ${limit.toLocaleString('en-US')} requests a day`;
    byId('detail-expires').replaceChildren(
      ...(expiresAt === null
        ? ['never expires']
        : [timeElement(expiresAt), ` (${fromNow(expiresAt)})`]),
    );
    byId('detail-last-used').replaceChildren(
      lastUsedAt === null ? 'never: no request has taken a unit yet' : timeElement(lastUsedAt),
    );
    byId('detail-scopes').replaceChildren(
      ...(scopes === null
        ? [`unrestricted: everything the ${tierName(tier)} tier allows`]
        : codeList(scopes)),
    );
    byId('detail-addresses').replaceChildren(
      ...(allowedAddresses === null ? ['unrestricted: any address'] : codeList(allowedAddresses)),
    );
  }

  const ACTORS = {
    self: 'by the key’s holder',
    operator: 'by the operator',
    leak_report: 'by a secret scanner’s report',
  };

  /** What happened, in words; `endedBy`: when the next event that ends a previous secret came. */
  function describeEvent({ type, at, detail }, endedBy) {
    switch (type) {
      case 'created': {
        const parts = [`on the ${tierName(detail.tier)} tier`];
        if (detail.expiresAt) parts.push(`ending ${when(detail.expiresAt)}`);
        if (detail.scopes) parts.push(`scopes ${detail.scopes.join(', ')}`);
        if (detail.allowedAddresses) parts.push(`from ${detail.allowedAddresses.join(', ')}`);
        return `Created ${parts.join('; ')}`;
      }
      case 'rolled': {
        // A later roll, revoke, end or leak report ended the grace early: whichever came first.
        const end = Math.min(
          Date.parse(detail.previousKeyExpiresAt),
          endedBy ? Date.parse(endedBy) : Infinity,
        );
        const until = when(new Date(end).toISOString());
        const text =
          end <= Date.parse(at)
            ? 'Rolled: the secret before stopped at once'
            : `Rolled: the secret before ${end > Date.now() ? 'works' : 'worked'} until ${until}`;
        return detail.expiresAt ? `${text}; the new one ends ${when(detail.expiresAt)}` : text;
      }
      case 'tier_changed':
        return `Tier changed from ${tierName(detail.from)} to ${tierName(detail.to)}`;
      case 'restricted': {
        const parts = [];
        if ('scopes' in detail)
          parts.push(`scopes ${detail.scopes ? detail.scopes.join(', ') : 'unrestricted'}`);
        if ('allowedAddresses' in detail)
          parts.push(
            `addresses ${detail.allowedAddresses ? detail.allowedAddresses.join(', ') : 'any'}`,
          );
        if ('expiresAt' in detail)
          parts.push(`end ${detail.expiresAt ? when(detail.expiresAt) : 'never'}`);
        return `Restrictions changed: ${parts.join('; ')}`;
      }
      case 'expired':
        return 'Expired';
      case 'revoked':
        return 'Revoked';
      case 'leak_reported': {
        const ended = detail.ended === 'previous secret' ? 'the secret before' : 'the key';
        return `Reported leaked${detail.url ? ` at ${detail.url}` : ''}; ${ended} ended`;
      }
      default:
        return type;
    }
  }

  // The events that end a key's previous secret, whatever its grace.
  const ENDS_PREVIOUS = new Set(['rolled', 'revoked', 'expired', 'leak_reported']);

  function showEvents(events) {
    let endedBy = null;
    // Newest first, so each event's `endedBy` is the nearest later one that ends a secret.
    const items = events.map((event) => {
      const item = document.createElement('li');
      item.dataset.type = event.type;
      item.dataset.by = event.by;
      const what = document.createElement('span');
      what.className = 'event-what';
      what.textContent = describeEvent(event, endedBy);
      if (ENDS_PREVIOUS.has(event.type)) endedBy = event.at;
      const meta = document.createElement('span');
      meta.className = 'event-meta';
      meta.append(timeElement(event.at), `, ${ACTORS[event.by] ?? event.by}`);
      if (event.address) meta.append(` from ${event.address}`);
      item.append(what, meta);
      return item;
    });
    byId('key-events').replaceChildren(...items);
    byId('key-events-empty').hidden = items.length > 0;
  }

  // Your key: the key pasted (or rolled to) lives in `heldKey` and the field only, never in
  // storage, a URL or the console, and goes only to this origin in the x-api-key header.
  let heldKey = '';
  let loads = 0;
  const keyView = byId('key-view');

  async function keyed(url, key, init = {}) {
    const response = await fetch(url, { ...init, headers: { ...init.headers, 'x-api-key': key } });
    return { response, payload: await response.json().catch(() => ({})) };
  }

  /**
   * Reads the key's usage and events and shows them: null once shown, else the error to show
   * (the API's own words). A load overtaken by a later one shows nothing.
   */
  async function loadKey(key) {
    const load = ++loads;
    let answers;
    try {
      answers = await Promise.all([
        keyed('/v1/usage', key),
        keyed('/v1/keys/events', key),
        keyed('/v1/usage/searches', key),
      ]);
    } catch (err) {
      return `Could not reach the server: ${err.message}`;
    }
    if (load !== loads) return null;
    const failed = answers.find(({ response }) => !response.ok);
    if (failed) {
      return failed.payload.error || `Could not read the key (HTTP ${failed.response.status})`;
    }
    const [usage, events, searches] = answers.map(({ payload }) => payload.data);
    heldKey = key;
    showDetails(usage);
    showUsage(usage);
    showSearches(searches);
    showEvents(events);
    keyView.hidden = false;
    byId('my-key-status').textContent =
      `Showing key ${usage.keyId}: ${tierName(usage.tier)} tier, ${usage.used} of ` +
      `${usage.limit} requests used today, ${events.length} changes listed.`;
    return null;
  }

  /** The key's most frequent queries and those that found nothing, beside its usage. */
  function showSearches({ top, noHit, totals, recording }) {
    byId('searches-summary').textContent = !recording
      ? 'Searches are not recorded on this service.'
      : totals.searches === 0
        ? 'No searches yet.'
        : `${totals.searches} searches, ${totals.noHits} of them found nothing.`;
    const fill = (id, queries) =>
      byId(id).replaceChildren(
        ...queries.map(({ query, count }) => {
          const item = document.createElement('li');
          item.textContent = `${query} (${count})`;
          return item;
        }),
      );
    fill('search-top', top);
    fill('search-no-hit', noHit);
  }

  // A new key is shown once: pasting another key takes it off the page.
  function forgetRolled() {
    byId('rolled').hidden = true;
    byId('rolled-key').textContent = '';
    byId('rolled-previous').textContent = '';
  }

  const keyForm = byId('my-key-form');
  const keyButton = byId('my-key-button');
  keyForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (keyButton.disabled) return;
    const error = byId('my-key-error');
    error.hidden = true;
    byId('roll-error').hidden = true;
    forgetRolled();
    keyButton.disabled = true;
    const message = await loadKey(byId('my-key').value.trim());
    keyButton.disabled = false;
    if (message === null) return;
    heldKey = '';
    keyView.hidden = true;
    error.textContent = message;
    error.hidden = false;
  });

  const rollForm = byId('roll-form');
  const rollButton = byId('roll-button');
  const rollError = byId('roll-error');
  const showRollError = (message) => {
    rollError.textContent = message;
    rollError.hidden = false;
  };

  rollForm.addEventListener('change', () => {
    byId('roll-none-warning').hidden = rollForm.elements.grace.value !== '0';
  });

  function showRolled({ apiKey: newKey, previousKeyExpiresAt }, graceSeconds) {
    byId('my-key').value = newKey;
    byId('rolled-key').textContent = newKey;
    byId('rolled-previous').textContent =
      graceSeconds === 0
        ? 'The secret you pasted stopped working at once.'
        : `The secret you pasted works until ${when(previousKeyExpiresAt)}.`;
    byId('rolled').hidden = false;
    byId('rolled-heading').focus();
  }

  rollForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (rollButton.disabled || !heldKey) return;
    const graceSeconds = Number(rollForm.elements.grace.value);
    const label = rollButton.textContent;
    rollButton.disabled = true;
    rollButton.textContent = 'Rolling…';
    rollError.hidden = true;
    try {
      const { response, payload } = await keyed('/v1/keys/roll', heldKey, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ graceSeconds }),
      });
      if (response.status !== 201) {
        return showRollError(payload.error || `The roll failed (HTTP ${response.status})`);
      }
      showRolled(payload, graceSeconds);
      const message = await loadKey(payload.apiKey);
      if (message !== null) showRollError(message);
    } catch (err) {
      showRollError(`Could not reach the server: ${err.message}`);
    } finally {
      rollButton.disabled = false;
      rollButton.textContent = label;
    }
  });

  byId('open-my-key').addEventListener('click', () => {
    byId('my-key').value = apiKey;
    byId('your-key-heading').focus();
    keyForm.requestSubmit();
  });

  byId('try-button').addEventListener('click', async () => {
    const output = byId('try-output');
    output.hidden = false;
    try {
      const response = await fetch('/v1/tools?limit=3', { headers: { 'x-api-key': apiKey } });
      const remaining = response.headers.get('x-ratelimit-remaining');
      const payload = await response.json();
      output.textContent = `HTTP ${response.status}, ${remaining} requests left today\n${JSON.stringify(payload, null, 2)}`;
    } catch (err) {
      output.textContent = `Request failed: ${err.message}`;
    }
  });
})();
