// The consent page of an agent's sign-in: shows what the agent asks for, takes the person's API
// key (or registers a free one) and sends the decision; the server answers where to go next.
(() => {
  const byId = (id) => document.getElementById(id);
  const uid = location.pathname.split('/').pop();
  const base = `/oauth/consent/${encodeURIComponent(uid)}`;
  const errorBox = byId('consent-error');
  const SCOPE_TEXT = {
    'catalog:read': 'read the catalog: tools, categories, search, comparisons',
    export: 'export the whole catalog',
    webhooks: 'manage your webhook subscriptions',
    usage: "read your key's usage and events",
    'keys:roll': 'roll your key',
  };

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  async function send(body) {
    const response = await fetch(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const payload = await response.json().catch(() => ({}));
    if (response.ok && payload.redirectTo) {
      location.assign(payload.redirectTo);
      return;
    }
    showError(payload.error || `The server refused (HTTP ${response.status})`);
  }

  async function load() {
    const response = await fetch(`${base}/details`);
    const payload = await response.json().catch(() => ({}));
    byId('consent-loading').hidden = true;
    if (!response.ok) return showError(payload.error || `HTTP ${response.status}`);
    byId('client-name').textContent = payload.client.name;
    byId('client-uri').textContent = payload.client.uri || payload.client.id;
    byId('redirect-uri').textContent = payload.client.redirectUri;
    const list = byId('scopes');
    for (const scope of payload.scopes) {
      const item = document.createElement('li');
      item.textContent = SCOPE_TEXT[scope] || scope;
      list.append(item);
    }
    byId('consent-request').hidden = false;
  }

  byId('consent-form').addEventListener('submit', (event) => {
    event.preventDefault();
    errorBox.hidden = true;
    const apiKey = byId('api-key').value.trim();
    if (!apiKey) return showError('Paste your API key, or get a free one below.');
    send({ allow: true, apiKey }).catch((err) => showError(err.message));
  });
  byId('deny').addEventListener('click', () => {
    send({ allow: false }).catch((err) => showError(err.message));
  });
  byId('register-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    errorBox.hidden = true;
    const response = await fetch('/v1/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        email: byId('register-email').value.trim(),
        name: byId('register-name').value.trim(),
        useCase: 'An AI agent signed in with OAuth',
      }),
    });
    const payload = await response.json().catch(() => ({}));
    if (!response.ok) return showError(payload.error || `HTTP ${response.status}`);
    byId('api-key').value = payload.apiKey;
    byId('register').open = false;
    showError('Your free key is filled in above. Keep a copy: it is shown only once.');
  });
  load().catch((err) => showError(err.message));
})();
