/** Reading typed arguments; a value of the wrong type is a 400 "Invalid parameter type provided". */
import type { Args } from '../http/args.js';
import { HttpError } from '../http/jsend.js';
import { MESSAGES } from './messages.js';

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

/** `true|false`, `1|0`, `yes|no` (any case); undefined when absent. */
export function boolArg(args: Args, name: string): boolean | undefined {
  const raw = args.get(name);
  if (raw === null) return undefined;
  const value = raw.trim().toLowerCase();
  if (TRUE.has(value)) return true;
  if (FALSE.has(value)) return false;
  throw new HttpError(400, MESSAGES.invalidParameterType, { [name]: 'expected true or false' });
}

/** An unsigned decimal integer (an id, a limit) within the safe range, or undefined for anything else. */
export function parseUnsigned(raw: string | null | undefined): number | undefined {
  if (raw == null) return undefined;
  const text = raw.trim();
  if (!/^[0-9]{1,16}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A non-negative integer argument (limit, offset); undefined when absent. */
export function countArg(args: Args, name: string): number | undefined {
  const raw = args.get(name);
  if (raw === null) return undefined;
  const n = parseUnsigned(raw);
  if (n === undefined) throw new HttpError(400, MESSAGES.invalidParameterType, { [name]: 'expected a non-negative integer' });
  return n;
}

/** All values of a repeatable filter argument; undefined when absent. */
export function listArg(args: Args, name: string): string[] | undefined {
  const values = args.getAll(name);
  return values.length > 0 ? values : undefined;
}
