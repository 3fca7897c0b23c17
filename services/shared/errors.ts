import createError from '@fastify/error';

/**
 * Every error the API answers with, as typed codes in the style of @fastify/error. The code
 * goes to logs and metrics; clients get the message in docs/api.md#errors's `{ "error" }` body.
 */
export const Errors = {
  badParameter: createError<[string]>('TD_BAD_PARAMETER', '%s', 400),
  invalidJson: createError<[string]>('TD_INVALID_JSON', 'Request body is not valid JSON: %s', 400),
  invalidUtf8: createError('TD_INVALID_UTF8', 'The request body is not valid UTF-8', 400),
  unsupportedMediaType: createError<[string]>(
    'TD_UNSUPPORTED_MEDIA_TYPE',
    "Content-Type '%s' is not supported; send application/json",
    415,
  ),
  payloadTooLarge: createError<[number]>(
    'TD_PAYLOAD_TOO_LARGE',
    'Request body is larger than %d bytes',
    413,
  ),
  toolNotFound: createError<[string]>('TD_TOOL_NOT_FOUND', "Tool '%s' not found", 404),
  badUrl: createError('TD_BAD_URL', 'The URL is not validly percent-encoded', 400),
  pathTraversal: createError(
    'TD_PATH_TRAVERSAL',
    "The URL path may not contain '..' segments",
    400,
  ),
  pathTooLong: createError('TD_PATH_TOO_LONG', 'A path segment of the URL is too long', 414),
  badRequest: createError('TD_BAD_REQUEST', 'The request is malformed', 400),
  routeNotFound: createError<[string, string, string]>(
    'TD_ROUTE_NOT_FOUND',
    'Route %s %s does not exist%s',
    404,
  ),
  sameTool: createError<[string]>(
    'TD_COMPARE_SAME_TOOL',
    "Cannot compare '%s' with itself; give two different tool slugs",
    400,
  ),
  paidTierRequired: createError(
    'TD_PAID_TIER_REQUIRED',
    'This endpoint needs a Pro or Enterprise key',
    403,
  ),
  enterpriseTierRequired: createError(
    'TD_ENTERPRISE_TIER_REQUIRED',
    'This endpoint needs an Enterprise key',
    403,
  ),
  internalAuth: createError(
    'TD_INTERNAL_AUTH',
    'This service only answers requests that come through the gateway',
    401,
  ),
  apiKeyMissing: createError<[string]>(
    'TD_API_KEY_MISSING',
    'The x-api-key header is missing; register for a free key at %s',
    401,
  ),
  apiKeyInvalid: createError('TD_API_KEY_INVALID', 'The API key is invalid', 401),
  signInGone: createError(
    'TD_SIGN_IN_GONE',
    'This sign-in is no longer open (it expired, was finished, or its cookie is missing): start again from the agent',
    400,
  ),
  accessTokenInvalid: createError(
    'TD_ACCESS_TOKEN_INVALID',
    'The access token is invalid, expired or revoked: sign the agent in again',
    401,
  ),
  // A secret that ended is answered with what ended it (docs/security.md), never as unknown.
  apiKeyRevoked: createError<[string]>(
    'TD_API_KEY_REVOKED',
    'The API key is invalid: it was revoked at %s',
    401,
  ),
  apiKeyReplaced: createError<[string]>(
    'TD_API_KEY_REPLACED',
    "The API key is invalid: it was replaced by a roll at %s; use the key's current secret",
    401,
  ),
  apiKeyExpired: createError<[string]>(
    'TD_API_KEY_EXPIRED',
    'The API key is invalid: it expired at %s',
    401,
  ),
  apiKeyLeaked: createError<[string]>(
    'TD_API_KEY_LEAKED',
    'The API key is invalid: it was revoked because it was reported leaked at %s',
    401,
  ),
  secretBeingReplaced: createError<[string]>(
    'TD_SECRET_BEING_REPLACED',
    "This secret is being replaced (it works until %s) and cannot manage the key; use the key's current secret",
    403,
  ),
  scopeMissing: createError<[string]>(
    'TD_SCOPE_MISSING',
    "This key is restricted: it lacks the scope '%s' this endpoint needs",
    403,
  ),
  addressNotAllowed: createError(
    'TD_ADDRESS_NOT_ALLOWED',
    'This key is restricted: this address is not allowed to use it',
    403,
  ),
  keyChanged: createError(
    'TD_KEY_CHANGED',
    'The key was changed by another request meanwhile; check which secret is current and try again',
    409,
  ),
  leakReportUnsigned: createError(
    'TD_LEAK_REPORT_UNSIGNED',
    'The leak report is not signed by an accepted secret-scanning key',
    401,
  ),
  leakReportTooLarge: createError<[number]>(
    'TD_LEAK_REPORT_TOO_LARGE',
    'A leak report holds at most %d tokens',
    413,
  ),
  tooManyLeakReports: createError<[number]>(
    'TD_TOO_MANY_LEAK_REPORTS',
    'Too many leak reports from this address; at most %d a minute',
    429,
  ),
  tooManyInvalidKeys: createError<[number]>(
    'TD_TOO_MANY_INVALID_KEYS',
    'Too many invalid API keys from this address; at most %d a minute',
    429,
  ),
  quotaExceeded: createError<[string, number, string]>(
    'TD_QUOTA_EXCEEDED',
    'Daily quota of the %s tier (%d requests) exceeded; it resets at %s',
    429,
  ),
  emailTaken: createError<[string]>(
    'TD_EMAIL_TAKEN',
    "An active API key is already registered for '%s'",
    409,
  ),
  registrationLimited: createError<[number]>(
    'TD_REGISTRATION_LIMITED',
    'Too many registrations from this address; at most %d an hour',
    429,
  ),
  upstreamUnavailable: createError(
    'TD_UPSTREAM_UNAVAILABLE',
    'The catalog service is unavailable; try again shortly',
    503,
  ),
  upstreamBadGateway: createError(
    'TD_UPSTREAM_BAD_GATEWAY',
    'The catalog service failed to answer',
    502,
  ),
  upstreamTimeout: createError(
    'TD_UPSTREAM_TIMEOUT',
    'The catalog service did not answer in time',
    504,
  ),
  adminAuth: createError(
    'TD_ADMIN_AUTH',
    'The admin endpoints need Authorization: Bearer <ADMIN_TOKEN>',
    401,
  ),
  invalidTools: createError<[string]>('TD_INVALID_TOOLS', 'Invalid tool records: %s', 400),
  slugMismatch: createError<[string, string]>(
    'TD_SLUG_MISMATCH',
    "The record's slug '%s' differs from the slug '%s' in the path",
    400,
  ),
  storageFull: createError(
    'TD_STORAGE_FULL',
    'Nothing can be stored right now: the storage is full; try again later',
    503,
  ),
  keyStoreUnavailable: createError(
    'TD_KEY_STORE_UNAVAILABLE',
    'API keys cannot be checked right now; try again shortly',
    503,
  ),
  changesGone: createError<[string]>(
    'TD_CHANGES_GONE',
    'The changes after this cursor are no longer kept (the change log keeps %s days): ' +
      'resynchronise with GET /v1/tools?updatedSince=<the newest updatedAt you hold> or the ' +
      'export, then follow GET /v1/changes from its first page',
    410,
  ),
  webhookNotFound: createError<[string]>('TD_WEBHOOK_NOT_FOUND', "Webhook '%s' not found", 404),
  webhookUrlRefused: createError<[string]>(
    'TD_WEBHOOK_URL_REFUSED',
    "Invalid field 'url': %s",
    400,
  ),
  tooManyWebhooks: createError<[number]>(
    'TD_TOO_MANY_WEBHOOKS',
    'A key may hold at most %d webhook subscriptions; delete one first',
    400,
  ),
  webhookDisabled: createError<[string, string]>(
    'TD_WEBHOOK_DISABLED',
    "Webhook '%s' was disabled at %s because its receiver answered 410 Gone; create a new one",
    409,
  ),
} as const;
