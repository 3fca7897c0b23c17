// Developer portal: registers for a key, shows it once, fills it into the examples, copies.
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
    byId('usage-key').value = key;
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
    byId('usage-result').hidden = false;
  }

  byId('usage-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = byId('usage-error');
    error.hidden = true;
    try {
      const response = await fetch('/v1/usage', {
        headers: { 'x-api-key': byId('usage-key').value.trim() },
      });
      const payload = await response.json().catch(() => ({}));
      if (response.ok) return showUsage(payload.data);
      error.textContent = payload.error || `Could not read the usage (HTTP ${response.status})`;
    } catch (err) {
      error.textContent = `Could not reach the server: ${err.message}`;
    }
    byId('usage-result').hidden = true;
    error.hidden = false;
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
