import { Errors } from '../../../shared/errors';

/**
 * The change log's cursors (docs/api.md#staying-in-sync): opaque to clients, a catalog version
 * inside, so one cursor means the same on every replica and after every restart.
 */
const CURSOR_FORM = /^c1:(0|[1-9]\d{0,14})$/;

export function encodeCursor(version: number): string {
  return Buffer.from(`c1:${version}`).toString('base64url');
}

/** The version a cursor stands for; a 400 for anything this API did not hand out. */
export function decodeCursor(cursor: string): number {
  const match = CURSOR_FORM.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  // base64url decoding skips what it cannot read: only a cursor that re-encodes to itself is one.
  if (!match || encodeCursor(Number(match[1])) !== cursor) {
    throw new Errors.badParameter(
      "Invalid query parameter 'since': must be a cursor from a GET /v1/changes answer (meta.nextCursor or an entry's cursor)",
    );
  }
  return Number(match[1]);
}
