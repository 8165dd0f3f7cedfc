/** The built-in semi-passive checks by name: what a plugin's `{kind: 'check', check}` names. */
import { checkBanners } from './banners.js';
import { checkCookies } from './cookies.js';
import { checkCors } from './cors.js';
import { checkFraming } from './framing.js';
import { checkHttpMethods } from './http-methods.js';
import { checkRobots } from './robots.js';
import { checkTls } from './tls.js';
import { fetchPage, type FetchPage } from './client.js';
import type { Check, CheckInput } from '../types.js';
import type { CheckName } from './names.js';

export const CHECKS: Record<CheckName, Check> = {
  robots: (input) => checkRobots(input, clientFor(input)),
  banners: (input) => checkBanners(input, clientFor(input)),
  tls: (input) => checkTls(input, clientFor(input)),
  'http-methods': (input) => checkHttpMethods(input, clientFor(input)),
  cookies: (input) => checkCookies(input, clientFor(input)),
  framing: (input) => checkFraming(input, clientFor(input)),
  cors: (input) => checkCors(input, clientFor(input)),
};

/** The client a check sends with: one that notes every request in the input's transcript, when it has one. */
function clientFor(input: CheckInput): FetchPage {
  const { transcript } = input;
  return transcript ? (url, options) => fetchPage(url, { ...options, transcript }) : fetchPage;
}

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

/** The ranks each check gives (besides -1, a target that did not answer): docs/PLUGINS.md's table says the same. */
export const CHECK_RANKS: Record<CheckName, readonly number[]> = {
  robots: [1, 0],
  banners: [1, 0],
  tls: [3, 0],
  'http-methods': [3, 2, 1, 0],
  cookies: [2, 0],
  framing: [2, 1, 0],
  cors: [4, 2, 1, 0],
};

export { fetchPage, type FetchOptions, type FetchPage, type Page } from './client.js';
export { highestRank } from './outcome.js';
