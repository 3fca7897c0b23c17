import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  preHandlerAsyncHookHandler,
} from 'fastify';
import fp from 'fastify-plugin';
import {
  STORAGE_FULL_RETRY_AFTER_S,
  type StorageSpace,
  isStorageFull,
} from './embedded/storage-space';
import { Errors } from './errors';
import { validationMessage } from './validation-message';

/** Fastify's own client errors, mapped to the API's typed codes and wording. */
function fromFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
): FastifyError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new Errors.unsupportedMediaType(request.headers['content-type'] ?? 'none');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Errors.payloadTooLarge(request.routeOptions.bodyLimit);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new Errors.invalidJson(error.message);
    default:
      return error instanceof SyntaxError ? new Errors.invalidJson(error.message) : undefined;
  }
}

/**
 * The 404 of a method and path no route answers (the query string left out); a path outside
 * /v1 is told where the API is.
 */
export function routeNotFound(request: FastifyRequest): FastifyError {
  const path = request.url.split('?')[0] ?? '/';
  const underApi = path === '/v1' || path.startsWith('/v1/');
  return new Errors.routeNotFound(
    request.method,
    path,
    underApi ? '' : '; the API lives under /v1',
  );
}

/**
 * The single error handler of a service: every error leaves as JSON `{ "error" }` with the
 * right status; validation errors name the parameter; a server error never shows its stack.
 */
export interface ErrorHandlerOptions {
  /** Runs before the 404 of an unknown route (the gateway counts a keyed request there too). */
  notFoundPreHandler?: preHandlerAsyncHookHandler;
  /** Told of each write that failed for lack of space (readiness reports it). */
  storage?: Pick<StorageSpace, 'failed'>;
}

/**
 * Sends `{ "error" }` with its own serializer: a handler may have set its success serializer
 * (the catalog's tier serializers) before failing, and that one cannot write an error body.
 */
function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .serializer(JSON.stringify)
    .send({ error: message });
}

export const errorHandlerPlugin = fp<ErrorHandlerOptions>(
  async function errorHandler(app: FastifyInstance, { notFoundPreHandler, storage }) {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      if (isStorageFull(error)) {
        // Nothing was stored: the write's transaction failed whole.
        storage?.failed();
        request.log.warn({ err: error }, 'write refused: storage full');
        reply.header('retry-after', STORAGE_FULL_RETRY_AFTER_S);
        return sendError(reply, 503, new Errors.storageFull().message);
      }
      if (error.validation) {
        const message = validationMessage(
          error.validation,
          error.validationContext,
          request.routeOptions.schema as Record<string, unknown> | undefined,
        );
        request.log.info({ code: 'TD_BAD_PARAMETER', err: message }, 'rejected request');
        return sendError(reply, 400, message);
      }
      const mapped = fromFrameworkError(error, request) ?? error;
      const status = mapped.statusCode ?? 500;
      if (status >= 500 && !mapped.code?.startsWith('TD_')) {
        request.log.error({ err: error }, 'unhandled error');
        return sendError(reply, 500, 'Internal server error');
      }
      return sendError(reply, status, mapped.message);
    });

    app.setNotFoundHandler(
      notFoundPreHandler ? { preHandler: notFoundPreHandler } : {},
      (request, reply) => {
        return reply.code(404).send({ error: routeNotFound(request).message });
      },
    );
  },
  { name: 'error-handler' },
);
