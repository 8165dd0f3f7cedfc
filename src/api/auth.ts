/** /api/v1/auth: whether the server needs a token, and the web application's login and logout. */
import type { AccessCheck } from '../http/access.js';
import { HttpError, HTTP_MESSAGES, success } from '../http/jsend.js';
import type { Router } from '../http/router.js';
import type { Handler } from './context.js';

export const AUTH_PATH = '/api/v1/auth';

export function registerAuth(router: Router<Handler>, access: AccessCheck): void {
  // Reached only with the token (or without one configured): the answer says which.
  router.add('GET', AUTH_PATH, () => success({ token_required: access.tokenRequired }));

  // The one request that needs no token beforehand: it carries the token, and sets the login cookie.
  router.add('POST', AUTH_PATH, (ctx) => {
    if (!access.tokenRequired) return success({ token_required: false });
    const token = ctx.args.get('token');
    if (token === null || !access.tokenMatches(token.trim())) {
      access.noteFailure('a wrong token at login', ctx.remoteAddress);
      throw new HttpError(401, HTTP_MESSAGES.invalidToken, token === null ? { token: 'required' } : undefined, {
        'WWW-Authenticate': 'Bearer realm="assessd"',
      });
    }
    return { ...success({ token_required: true }), headers: { 'Set-Cookie': access.loginCookie(true) } };
  });

  router.add('DELETE', AUTH_PATH, () => ({ ...success({ token_required: access.tokenRequired }), headers: { 'Set-Cookie': access.loginCookie(false) } }));
}
