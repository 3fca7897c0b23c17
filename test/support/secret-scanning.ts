import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDataDir } from './services';

/**
 * A secret-scanning provider of the tests' own: an ECDSA P-256 key pair made with openssl, its
 * public key published in GitHub's format in a file for SECRET_SCANNING_PUBLIC_KEYS, and reports
 * signed as GitHub signs them (the base64 of the DER signature over the raw body).
 */
export function scanningProvider(identifier = `test-key-${process.pid}`) {
  const dir = tempDataDir();
  const privateKey = path.join(dir, 'scanner.pem');
  execFileSync('openssl', [
    'ecparam',
    '-name',
    'prime256v1',
    '-genkey',
    '-noout',
    '-out',
    privateKey,
  ]);
  const publicPem = execFileSync('openssl', ['ec', '-in', privateKey, '-pubout'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();
  const publicKeysFile = path.join(dir, 'public-keys.json');
  writeFileSync(
    publicKeysFile,
    JSON.stringify({
      public_keys: [{ key_identifier: identifier, key: publicPem, is_current: true }],
    }),
  );
  const sign = (body: string) =>
    execFileSync('openssl', ['dgst', '-sha256', '-sign', privateKey], { input: body }).toString(
      'base64',
    );
  return {
    identifier,
    publicKeysFile,
    sign,
    /** The headers and body of a report of these tokens, signed (or signed by `signer`). */
    report(tokens: string[], url = 'https://github.com/octo/app/blob/main/.env') {
      const body = JSON.stringify(
        tokens.map((token) => ({ token, type: 'tool_directory_api_key', url, source: 'content' })),
      );
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'github-public-key-identifier': identifier,
          'github-public-key-signature': sign(body),
        },
      };
    },
  };
}
