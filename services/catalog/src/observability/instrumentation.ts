import { startTelemetry } from '../../../shared/telemetry';

/** Imported first by server.ts, so that tracing is in place before any instrumented module loads. */
export const { settings: tracing, sdk: telemetry } = startTelemetry('tool-directory-catalog');
