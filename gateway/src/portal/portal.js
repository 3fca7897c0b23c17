// Developer portal: registers for a key, shows it once, and tries it against the API.
(function () {
  const form = document.getElementById('register-form');
  const errorBox = document.getElementById('register-error');
  const result = document.getElementById('key-result');
  const keyBox = document.getElementById('api-key');
  const copyStatus = document.getElementById('copy-status');
  const output = document.getElementById('try-output');
  let apiKey = '';

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    errorBox.hidden = true;
    const body = {
      email: form.email.value.trim(),
      name: form.name.value.trim(),
      useCase: form.useCase.value.trim(),
    };
    try {
      const response = await fetch('/v1/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const payload = await response.json();
      if (!response.ok) return showError(payload.error || 'Registration failed');
      apiKey = payload.apiKey;
      keyBox.textContent = apiKey;
      document.getElementById('curl-example').textContent =
        `curl -H 'x-api-key: ${apiKey}' ${location.origin}/v1/tools?limit=3`;
      form.hidden = true;
      result.hidden = false;
    } catch (err) {
      showError(`Registration failed: ${err.message}`);
    }
  });

  document.getElementById('copy-button').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(apiKey);
      copyStatus.textContent = 'Copied';
    } catch {
      const range = document.createRange();
      range.selectNodeContents(keyBox);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      copyStatus.textContent = 'Selected: press Ctrl+C';
    }
  });

  document.getElementById('try-button').addEventListener('click', async () => {
    const response = await fetch('/v1/tools?limit=3', { headers: { 'x-api-key': apiKey } });
    const remaining = response.headers.get('x-ratelimit-remaining');
    const payload = await response.json();
    output.textContent = `HTTP ${response.status}, ${remaining} requests left today\n${JSON.stringify(payload, null, 2)}`;
  });
})();
