/** Dates as files bring them (HAR entries, bundles): checked as well as Date.parse reads them. */

/** Whether a date's day is one of its month's (Date.parse takes 2024-02-30 for March 1st). */
export function dayExists(text: string): boolean {
  const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  if (!ymd) return true;
  const [year, month, day] = [Number(ymd[1]), Number(ymd[2]), Number(ymd[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
