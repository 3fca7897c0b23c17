import type { LoggerOptions } from 'pino';

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
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  };
}
