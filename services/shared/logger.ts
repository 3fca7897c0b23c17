import { type Span, isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type Logger, type LoggerOptions, type TransportSingleOptions } from 'pino';
import { ConfigError } from './config';
import { LineBatch } from './log-batch';

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

/** A log line's fields naming a span, so the line leads to its trace. */
export interface TraceFields {
  trace_id: string;
  span_id: string;
}

/** The fields of a span, or null without a span or with an invalid one. */
export function traceFieldsOf(span: Span | undefined): TraceFields | null {
  const context = span?.spanContext();
  if (!context || !isSpanContextValid(context)) return null;
  return { trace_id: context.traceId, span_id: context.spanId };
}

/** The active span's fields, for every line (the logger's mixin). */
function traceFields(): Partial<TraceFields> {
  return traceFieldsOf(trace.getActiveSpan()) ?? {};
}

/**
 * pino-pretty, which pino loads by name in its transport worker, only when asked for. It is a
 * development dependency: production installs (the images) do not have it, and pino's own
 * message for a missing transport does not say which setting wanted it.
 */
function prettyTransport(): TransportSingleOptions {
  try {
    require.resolve('pino-pretty');
  } catch {
    throw new ConfigError(
      'LOG_PRETTY=true needs pino-pretty, a development dependency this installation does not ' +
        'have (production installs and the images omit it): unset LOG_PRETTY for JSON logs',
    );
  }
  return { target: 'pino-pretty', options: { colorize: true } };
}

/**
 * pino's `time` field as an ISO date, built once per millisecond: the lines of a burst of
 * requests share it instead of each formatting a Date.
 */
function isoTime(): () => string {
  let millisecond = -1;
  let field = '';
  return () => {
    const now = Date.now();
    if (now !== millisecond) {
      millisecond = now;
      field = `,"time":"${new Date(now).toISOString()}"`;
    }
    return field;
  };
}

export interface LoggerSettings {
  service: string;
  level: string;
  pretty: boolean;
  /** Tracing is on: each line carries the active span's ids (without it there are none). */
  traceIds: boolean;
}

/** pino options shared by both services: JSON lines with secrets redacted, pretty on request. */
export function loggerOptions({ service, level, pretty, traceIds }: LoggerSettings): LoggerOptions {
  return {
    level,
    base: { service },
    redact: { paths: SECRET_PATHS, censor: '[redacted]' },
    timestamp: isoTime(),
    formatters: { level: (label) => ({ level: label }) },
    ...(traceIds && { mixin: traceFields }),
    ...(pretty ? { transport: prettyTransport() } : {}),
  };
}

/**
 * Info lines (the access log) are written in batches of this many bytes, or after LOG_FLUSH_MS at
 * the latest, as nginx's `access_log … buffer=… flush=1s` does: a write call per request cost
 * the gateway more CPU than most of its features. A warning or an error goes out at once, with
 * whatever is kept before it; what is left is written at exit.
 */
const LOG_BATCH_BYTES = 16_384;
const LOG_FLUSH_MS = 1_000;
const WARN = 40;

/**
 * A service's logger. JSON lines go to stdout through an asynchronous, batched buffer, so a
 * request never waits on a log write; pretty output, when asked for, goes through pino-pretty.
 */
export function createLogger(settings: LoggerSettings): Logger {
  const options = loggerOptions(settings);
  if (settings.pretty) return pino(options);
  const destination = new LineBatch(
    pino.destination({ sync: false }),
    LOG_BATCH_BYTES,
    LOG_FLUSH_MS,
  );
  return pino(
    {
      ...options,
      hooks: {
        logMethod(args, method, level) {
          method.apply(this, args);
          if (level >= WARN) destination.flush();
        },
      },
    },
    destination,
  );
}
