import compress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * A request with this header gets its body plain whatever its Accept-Encoding (the library's
 * switch): an answer that a cache keyed on Accept-Encoding must not keep for others.
 */
export const COMPRESSION_OFF_HEADER = 'x-no-compression';

/** Below this a body goes as it is: a single tool for Free, errors, small lists. */
const COMPRESSION_THRESHOLD = 1024;

/**
 * Brotli or gzip, whichever the caller's Accept-Encoding prefers (Brotli on a tie), for bodies
 * from COMPRESSION_THRESHOLD bytes on and for the streamed export, compressed on the fly. The
 * gateway passes Accept-Encoding through and the encoded bytes back, so it spends no CPU on
 * this; the response cache keeps each encoded variant, so a repeated request compresses nothing.
 */
export const compressionPlugin = fp(
  async function compression(app: FastifyInstance) {
    await app.register(compress, {
      encodings: ['br', 'gzip'],
      threshold: COMPRESSION_THRESHOLD,
      // JSON, NDJSON (the export's default, unknown to the library) and CSV.
      customTypes: /^(?:application\/(?:json|x-ndjson)|text\/csv)(?:;|$)/,
      // Request bodies (admin writes only) stay plain: no decompression hook on every route.
      globalDecompression: false,
    });
  },
  { name: 'compression' },
);
