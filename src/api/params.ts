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

/**
 * An unsigned integer argument, or a 400 "Invalid parameter type provided" naming it. One past
 * 2^53 is still one (docs/API.md calls only what is not an unsigned integer a wrong type): it
 * reads as 2^53 - 1, an id nothing has and a limit or offset past every list.
 */
function unsigned(raw: string, name: string, what: string): number {
  const text = raw.trim();
  if (!/^[0-9]+$/.test(text)) throw new HttpError(400, MESSAGES.invalidParameterType, { [name]: `expected ${what}` });
  return Math.min(Number(text), Number.MAX_SAFE_INTEGER);
}

/** A non-negative integer argument (limit, offset); undefined when absent. */
export function countArg(args: Args, name: string): number | undefined {
  const raw = args.get(name);
  return raw === null ? undefined : unsigned(raw, name, 'a non-negative integer');
}

/** All values of a repeatable filter argument; undefined when absent. */
export function listArg(args: Args, name: string): string[] | undefined {
  const values = args.getAll(name);
  return values.length > 0 ? values : undefined;
}

function oneOf<T extends string>(raw: string, name: string, allowed: readonly T[]): T {
  const value = raw.trim().toLowerCase();
  if ((allowed as readonly string[]).includes(value)) return value as T;
  const words = allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} or ${allowed[allowed.length - 1]}` : allowed[0];
  throw new HttpError(400, MESSAGES.invalidParameterType, { [name]: `expected ${words}` });
}

/** One of a fixed set of words (any case); undefined when absent, a 400 for any other value. */
export function enumArg<T extends string>(args: Args, name: string, allowed: readonly T[]): T | undefined {
  const raw = args.get(name);
  return raw === null ? undefined : oneOf(raw, name, allowed);
}

/** Every value of a repeatable argument, each one of a fixed set of words. */
export function enumListArg<T extends string>(args: Args, name: string, allowed: readonly T[]): T[] {
  return args.getAll(name).map((raw) => oneOf(raw, name, allowed));
}

/** An optional id argument (its first value); a 400 "Invalid parameter type provided" if it is no integer. */
export function idArg(args: Args, name: string): number | undefined {
  const raw = args.get(name);
  return raw === null ? undefined : unsigned(raw, name, 'an integer');
}

/** Every value of a repeatable id argument; a 400 "Invalid parameter type provided" if one is no integer. */
export function idListArg(args: Args, name: string): number[] | undefined {
  return listArg(args, name)?.map((raw) => unsigned(raw, name, 'an integer'));
}
