import { InvalidRequestError } from '../../common/errors';

/** RFC 3339 date-time (`2026-11-27T02:10:04Z`, `…T02:10:04.5+01:00`; `t`/`z` and a space separator accepted). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;
/** Unix time in seconds, optionally with a fraction. */
const UNIX_SECONDS = /^\d{1,12}(?:\.\d{1,9})?$/;

/**
 * A time of the `GET /api/usage` query (`start`, `end`): RFC 3339 with a zone, or unix seconds.
 * @returns ms since the epoch.
 * @throws InvalidRequestError (400) naming the parameter when the value is neither, repeated, or not a real date.
 */
export function parseUsageTime(name: string, value: unknown): number {
  if (Array.isArray(value)) throw new InvalidRequestError(`invalid ${name}: given more than once`, name);
  if (typeof value !== 'string' || value === '') {
    throw new InvalidRequestError(`invalid ${name}: expected an RFC 3339 time or unix seconds`, name);
  }
  if (value.length <= 40 && UNIX_SECONDS.test(value)) return Math.round(Number(value) * 1000);
  if (value.length <= 40 && RFC3339.test(value)) {
    const ms = Date.parse(value.replace(' ', 'T').toUpperCase());
    if (Number.isFinite(ms) && sameCalendarDate(value)) return ms;
  }
  throw new InvalidRequestError(
    `invalid ${name} ${JSON.stringify(value.slice(0, 64))}: expected an RFC 3339 time (2006-01-02T15:04:05Z) or unix ` +
      'seconds',
    name,
  );
}

/** Whether the date part names a real day (Date.parse rolls 02-30 over into March). */
function sameCalendarDate(value: string): boolean {
  const [y, m, d] = [Number(value.slice(0, 4)), Number(value.slice(5, 7)), Number(value.slice(8, 10))];
  const date = new Date(Date.UTC(y, m - 1, d));
  const [hh, mm, ss] = [Number(value.slice(11, 13)), Number(value.slice(14, 16)), Number(value.slice(17, 19))];
  return date.getUTCMonth() === m - 1 && date.getUTCDate() === d && hh < 24 && mm < 60 && ss < 60;
}

/**
 * The range of a `GET /api/usage` query: `start` (default `sinceMs`, start-up) to `end` (default `nowMs`).
 * @returns ms since the epoch, `startMs <= endMs`.
 * @throws InvalidRequestError (400) for a bad time or a start after the end.
 */
export function usageRange(
  query: { start?: unknown; end?: unknown },
  sinceMs: number,
  nowMs: number,
): { startMs: number; endMs: number } {
  const startMs = query.start === undefined ? sinceMs : parseUsageTime('start', query.start);
  const endMs = query.end === undefined ? nowMs : parseUsageTime('end', query.end);
  if (startMs > endMs) throw new InvalidRequestError('invalid range: start is after end');
  return { startMs, endMs };
}
