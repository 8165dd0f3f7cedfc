/** /api/v1/auth: whether the server needs a token, and the web application's login and logout. */
import type { AccessCheck } from '../http/access.js';
import { HttpError, HTTP_MESSAGES, success } from '../http/jsend.js';
import type { ApiRouter } from './openapi.js';

export const AUTH_PATH = '/api/v1/auth';

export function registerAuth(router: ApiRouter, access: AccessCheck): void {
  const status = { type: 'object', required: ['token_required'], properties: { token_required: { type: 'boolean' } } };
  // Reached only with the token (or without one configured): the answer says which.
  router.add('GET', AUTH_PATH, () => success({ token_required: access.tokenRequired }), {
    summary: 'Whether the server needs a token (answered only with it, when it does)',
    ok: { status: 200, description: 'Authenticated, or no token needed', data: status },
  });

  // The one request that needs no token beforehand: it carries the token, and sets the login cookie.
  router.add('POST', AUTH_PATH, async (ctx) => {
    if (!access.tokenRequired) return success({ token_required: false });
    const token = ctx.args.get('token');
    if (token === null || !access.tokenMatches(token.trim())) {
      access.noteFailure('a wrong token at login', ctx.remoteAddress);
      throw new HttpError(401, HTTP_MESSAGES.invalidToken, token === null ? { token: 'required' } : undefined, {
        'WWW-Authenticate': 'Bearer realm="assessd"',
      });
    }
    return { ...success({ token_required: true }), headers: { 'Set-Cookie': await access.logIn() } };
  }, {
    summary: "The web application's login: the token in, an HttpOnly SameSite=Strict cookie out",
    open: true,
    args: { token: { type: 'string', required: true, description: 'The API token' } },
    ok: { status: 200, description: 'Logged in (or no token needed)', data: status, headers: { 'Set-Cookie': 'The login cookie' } },
    fails: { 401: [HTTP_MESSAGES.invalidToken] },
  });

  router.add('DELETE', AUTH_PATH, async (ctx) => ({ ...success({ token_required: access.tokenRequired }), headers: { 'Set-Cookie': await access.logOut(ctx.headers.cookie) } }), {
    summary: "Log out: ends the login the cookie holds (the value no longer works, here or anywhere it went) and clears the cookie",
    ok: { status: 200, description: 'Logged out', data: status, headers: { 'Set-Cookie': 'The cleared cookie' } },
  });
}
