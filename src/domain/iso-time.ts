/**
 * A point in time as the API writes it: RFC 3339 in UTC, as `Date#toISOString`
 * writes it, in about a quarter of its time (pages of sessions write 40 of
 * them). Outside years 0001–9999 it is `toISOString`'s own answer.
 */
export function isoTime(ms: number): IsoTime {
  if (!Number.isInteger(ms) || ms < MIN_MS || ms > MAX_MS)
    return new Date(ms).toISOString() as IsoTime;
  const seconds = Math.floor(ms / 1000);
  return `${isoSeconds(seconds)}${dotMillis(ms - seconds * 1000)}Z` as IsoTime;
}

/** ".000" to ".999" for 0 to 999 milliseconds. */
export function dotMillis(millis: number): string {
  return MILLIS[millis] as string;
}

const MILLIS = Array.from({ length: 1000 }, (_, i) => `.${String(i).padStart(3, "0")}`);
/** "00" to "59". */
const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, "0"));

declare const written: unique symbol;
/**
 * A string `isoTime` wrote: digits and "-+T:.Z" only, so JSON holds it as it
 * is, unescaped (rest/serializing.ts).
 */
export type IsoTime = string & { readonly [written]: true };

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z. */
const MIN_MS = -62_135_596_800_000;
const MAX_MS = 253_402_300_799_999;

/**
 * `YYYY-MM-DDTHH:MM:SS` of whole seconds since 1970 in UTC, for years
 * 0001–9999 (the caller checks the range).
 */
export function isoSeconds(seconds: number): string {
  const hour = Math.floor(seconds / 3600);
  if (hour !== lastHour) {
    // A page's times mostly share their hour: its text is kept.
    const days = Math.floor(hour / 24);
    lastHourText = `${civilDate(days)}T${TWO[hour - days * 24]}:`;
    lastHour = hour;
  }
  const ofHour = seconds - hour * 3600;
  const minutes = Math.floor(ofHour / 60);
  return `${lastHourText}${TWO[minutes]}:${TWO[ofHour - minutes * 60]}`;
}

let lastHour = Number.NaN;
let lastHourText = "";

let lastDay = Number.NaN;
let lastDate = "";

/** YYYY-MM-DD of a day counted from 1970-01-01 (Howard Hinnant's civil_from_days). */
function civilDate(days: number): string {
  if (days === lastDay) return lastDate;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  lastDay = days;
  lastDate = `${String(year).padStart(4, "0")}-${TWO[month]}-${TWO[day]}`;
  return lastDate;
}
