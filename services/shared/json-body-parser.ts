import type { FastifyInstance } from 'fastify';
import { isUtf8 } from 'node:buffer';
import { Errors } from './errors';

/**
 * Replaces Fastify's `application/json` parser of both services with the same parser behind a
 * check of the bytes: Fastify decodes a body as UTF-8 with replacement, so bytes that are not
 * UTF-8 would reach a field as U+FFFD, stored as if the client had sent it. Such a body is a 400
 * (`TD_INVALID_UTF8`) instead. Called before any route is registered, so every scope inherits it;
 * the gateway's catalog routes, which forward bodies as bytes, leave the check to the catalog.
 */
export function parseJsonAsUtf8(app: FastifyInstance): void {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(
    onProtoPoisoning ?? 'error',
    onConstructorPoisoning ?? 'error',
  );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    (request, body: Buffer, done) => {
      if (!isUtf8(body)) {
        done(new Errors.invalidUtf8(), undefined);
        return;
      }
      parseJson(request, body.toString('utf8'), done);
    },
  );
}
