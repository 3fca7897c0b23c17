/**
 * Instants as the API writes and reads them. `updatedAt` is written in one canonical form,
 * `2025-06-30T12:00:00.000Z` (UTC, milliseconds: JavaScript's `toISOString`), whose text order
 * is its time order, so both stores compare and sort instants as text. An instant that comes
 * in (`updatedSince`, an import's `updatedAt`) is an RFC 3339 date-time, the ISO 8601 profile
 * with a time zone: the forms Ajv's `date-time` format accepts (`T`, `t` or a space between
 * date and time; `Z`, `z` or an offset `+01:00`, `+0100`, `+01`; any number of fraction
 * digits; a leap second at 23:59:60 UTC).
 */

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt\s](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/;

const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The first and the last instant the canonical form can write (4-digit years). */
const EARLIEST = new Date(0).setUTCFullYear(0, 0, 1);
const LATEST = new Date(0).setUTCFullYear(9999, 11, 31) + 86_400_000 - 1;

/**
 * Milliseconds since the epoch of an RFC 3339 date-time, fractions of a millisecond dropped
 * (so "after" it and "after" its millisecond are the same for instants in milliseconds);
 * undefined when the text is not one.
 */
export function parseDateTime(text: string): number | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match.slice(7);
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes));
  const daysInMonth = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];
  if (daysInMonth === undefined || day < 1 || day > daysInMonth) return undefined;
  if (Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const utcMinutes = hour * 60 + minute - offset;
  // A leap second exists only as the last second of a UTC day.
  if (second === 60 && ((utcMinutes % 1440) + 1440) % 1440 !== 1439) return undefined;
  const midnight = new Date(0).setUTCFullYear(year, month - 1, day);
  return midnight + (utcMinutes * 60 + second) * 1000 + Number(fraction.padEnd(3, '0').slice(0, 3));
}

/** The canonical text of an instant; instants outside years 0000–9999 are held to them. */
export function formatInstant(ms: number): string {
  return new Date(Math.min(Math.max(ms, EARLIEST), LATEST)).toISOString();
}
