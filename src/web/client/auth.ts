/**
 * The token login: a `?token=` in the address bar logs in and leaves it at once; whenever the API
 * answers 401 a small form asks for the token; the header says a token is needed and logs out.
 */
import { api, ApiError } from './api.js';
import { byId, h, replace } from './dom.js';
import { announce, describeError } from './ui.js';

let asking: Promise<void> | undefined;
let loggedIn: () => void = () => {};

function showStatus(required: boolean): void {
  byId('auth').hidden = !required;
}

/**
 * Logged out: nothing of what the page showed stays readable behind the login form (a
 * transaction's cookies, a finding's evidence), and no Log out is offered; the view comes back
 * once logged in again.
 */
function hideData(): void {
  byId('main').replaceChildren(h('div', { class: 'state' }, h('p', { class: 'state-title' }, 'Logged out.'), h('p', {}, 'Log in again to see this page.')));
  byId('logout').hidden = true;
}

/** The form; resolves once the server took the token (or the user closed it). */
function askForToken(): Promise<void> {
  const input = h('input', { id: 'login-token', type: 'password', autocomplete: 'current-password', spellcheck: 'false', required: true });
  const error = h('p', { id: 'login-error', class: 'field-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Log in');
  const form = h(
    'form',
    {},
    h('h2', { id: 'login-title' }, 'Log in to assessd'),
    h('p', { id: 'login-help' }, 'This server needs its access token. Open the address it printed when it started (it ends in ?token=…), or paste the token from the file “token” in its data directory.'),
    h('div', { class: 'field' }, h('label', { for: input.id }, 'Access token'), input),
    error,
    h('div', { class: 'actions' }, submit),
  );
  input.setAttribute('aria-describedby', 'login-help login-error');
  const dialog = h('dialog', { class: 'login', 'aria-labelledby': 'login-title' }, form);
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve();
    });
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      submit.disabled = true;
      try {
        showStatus((await api.login(input.value.trim())).token_required);
        byId('logout').hidden = false;
        dialog.close();
        announce('Logged in.');
        loggedIn();
        // the keyboard goes to the view's heading, as after a navigation (closing the form left it on the body)
        byId('main').querySelector<HTMLElement>('h1')?.focus();
      } catch (err) {
        error.hidden = false;
        replace(error, err instanceof ApiError && err.status === 401 ? 'That is not the token of this server.' : describeError(err));
        input.setAttribute('aria-invalid', 'true');
        input.select();
      } finally {
        submit.disabled = false;
      }
    });
    dialog.showModal();
  });
}

/** Called on any 401: one form, however many requests were refused. */
export function authenticationRequired(): void {
  showStatus(true);
  asking ??= askForToken().finally(() => (asking = undefined));
}

/** Before the first view: takes a token from the address bar, then learns whether one is needed. */
export async function startAuth(whenLoggedIn: () => void): Promise<void> {
  loggedIn = whenLoggedIn;
  byId('logout').addEventListener('click', async () => {
    try {
      await api.logout();
      // said once, in the page behind the form (the form, taking the focus, is what a screen reader reads)
      hideData();
    } catch (err) {
      announce(`Could not log out: ${describeError(err)}`, 'error');
    }
    authenticationRequired();
  });
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  if (token !== null) {
    // out of the address bar (and the history) before anything else happens
    params.delete('token');
    const rest = params.toString();
    // the entry keeps its number (the router's)
    history.replaceState(history.state, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
    try {
      showStatus((await api.login(token)).token_required);
      return;
    } catch {
      // a wrong or stale token: the form below asks for the right one
    }
  }
  void api.authStatus().then(
    (status) => showStatus(status.token_required),
    () => {}, // a 401 has asked for the token already
  );
}
