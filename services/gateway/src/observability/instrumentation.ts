import { startTelemetry } from '../../../shared/telemetry';

/**
 * Imported first by server.ts, so that tracing is in place before any instrumented module loads.
 * Without async context: the request's context travels with the request (see startTelemetry).
 */
export const { settings: tracing, sdk: telemetry } = startTelemetry('tool-directory-gateway', {
  asyncContext: false,
});
