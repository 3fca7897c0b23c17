import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type Logger, type LoggerOptions } from 'pino';

/** Headers that carry secrets: never written to a log line, wherever they appear. */
const SECRET_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-internal-token"]',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers["x-internal-token"]',
  'apiKey',
  '*.apiKey',
];

/** `trace_id` and `span_id` of the active span, so a log line leads to its trace. */
function traceFields(): Record<string, string> {
  const context = trace.getActiveSpan()?.spanContext();
  if (!context || !isSpanContextValid(context)) return {};
  return { trace_id: context.traceId, span_id: context.spanId };
}

export interface LoggerSettings {
  service: string;
  level: string;
  pretty: boolean;
}

/** pino options shared by both services: JSON lines with secrets redacted, pretty on request. */
export function loggerOptions({ service, level, pretty }: LoggerSettings): LoggerOptions {
  return {
    level,
    base: { service },
    redact: { paths: SECRET_PATHS, censor: '[redacted]' },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }) },
    mixin: traceFields,
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  };
}

/**
 * A service's logger. JSON lines go to stdout through an asynchronous buffer, so a request never
 * waits on a log write (pino flushes it at exit); pretty output, when asked for, goes through
 * pino-pretty.
 */
export function createLogger(settings: LoggerSettings): Logger {
  const options = loggerOptions(settings);
  return settings.pretty ? pino(options) : pino(options, pino.destination({ sync: false }));
}
