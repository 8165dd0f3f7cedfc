/** The built-in semi-passive checks by name: what a plugin's `{kind: 'check', check}` names. */
import { checkBanners } from './banners.js';
import { checkCookies } from './cookies.js';
import { checkCors } from './cors.js';
import { checkFraming } from './framing.js';
import { checkHttpMethods } from './http-methods.js';
import { checkRobots } from './robots.js';
import { checkTls } from './tls.js';
import type { Check } from '../types.js';
import type { CheckName } from './names.js';

export const CHECKS: Record<CheckName, Check> = {
  robots: (input) => checkRobots(input),
  banners: (input) => checkBanners(input),
  tls: (input) => checkTls(input),
  'http-methods': (input) => checkHttpMethods(input),
  cookies: (input) => checkCookies(input),
  framing: (input) => checkFraming(input),
  cors: (input) => checkCors(input),
};

/** The plugin code each check answers for. */
export const CHECK_CODES: Record<string, string> = {
  robots: 'OWTF-IG-001',
  banners: 'OWTF-IG-004',
  tls: 'OWTF-CM-001',
  'http-methods': 'OWTF-CM-008',
  cookies: 'OWTF-SM-002',
  framing: 'OWTF-WGP-001',
  cors: 'OWTF-WGP-002',
};

export { fetchPage, type FetchOptions, type FetchPage, type Page } from './client.js';
export { highestRank } from './outcome.js';
