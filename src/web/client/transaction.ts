/**
 * One transaction (`/targets/<id>/transactions/<tx>`): its request and response as text, never
 * rendered as HTML (an image body is shown as an image from the body route, which serves it
 * sandboxed), copy as code in every language the server writes, and the repeater: the request
 * edited and sent again, its answer beside the recorded one.
 */
import { shownLines } from '../bidi.js';
import { api, ApiError, CODE_LANGUAGES, isAbort, isGone, type CodeLanguage, type ReplayEdits, type Transaction } from './api.js';
import { append, blockText, h, num, replace, setTitle } from './dom.js';
import { askBeforeLeaving, type ViewContext } from './router.js';
import { duration, size, statusClass, targetNav } from './target-nav.js';
import { listQueryKey } from './transactions.js';
import { announce, busy, copyText, describeError, errorState, loadingState, targetGoneState, viewHeading } from './ui.js';

/** Bytes of a body shown: the rest is a download. */
const SHOWN_BODY = 256 * 1024;

const LANGUAGE_NAMES: Record<CodeLanguage, string> = { bash: 'curl (bash)', python: 'Python', php: 'PHP', ruby: 'Ruby', fetch: 'JavaScript (fetch)', raw: 'Raw HTTP/1.1' };

/** The header lines of a raw request (between its request line and the blank line), HTTP/2's pseudo-headers left out. */
export function requestHeaderLines(raw: string): string[] {
  const end = raw.indexOf('\r\n\r\n');
  return raw.slice(0, end === -1 ? raw.length : end).split('\r\n').slice(1).filter((line) => line !== '' && !line.startsWith(':'));
}

const contentType = (headers: string) => /^content-type:\s*([^;\r\n]*)/im.exec(headers)?.[1].trim().toLowerCase() ?? '';

/**
 * Recorded values longer than this are not put into the repeater's fields (a field of megabytes
 * freezes the tab): the field is left empty, and the recorded value is sent unless one is typed.
 */
const FIELD_MAX = { method: 64 * 1024, url: 64 * 1024, headers: 64 * 1024, body: 1024 * 1024 };
const FIELD_NAMES = { method: 'method', url: 'URL', headers: 'headers', body: 'body' };

/** A scrollable block of text (focusable, so the keyboard scrolls it too). */
const textBlock = (text: Node[], label: string, id?: string) => h('pre', { class: 'message', tabindex: '0', 'aria-label': label, ...(id ? { id } : {}) }, ...text);

/** A message's head: line by line, each line cut on its own (a header of megabytes costs one line). */
const headText = (head: string) => document.createTextNode(shownLines(head));

/** A raw request: its head, then its body. */
function requestText(raw: string): Node[] {
  const end = raw.indexOf('\r\n\r\n');
  return end === -1 ? [headText(raw)] : [headText(raw.slice(0, end + 4)), blockText(raw.slice(end + 4))];
}

/** A response's status line, headers and body, as text. */
function responseBlock(t: Transaction, label: string): HTMLElement {
  const type = contentType(t.response_headers);
  let body: HTMLElement;
  if (t.binary_response) {
    body = type.startsWith('image/')
      ? h('figure', { class: 'body-image' }, h('img', { src: api.bodyUrl(t.target_id, t.id), alt: `The response body of #${t.id} (${type}, ${size(t.response_size)})` }), h('figcaption', { class: 'hint' }, `${type}, ${size(t.response_size)}`))
      : h('p', { class: 'hint' }, `A body of ${size(t.response_size)}${type ? ` (${type})` : ''} that is not UTF-8 text: not shown here; download it to read its bytes.`);
  } else body = t.response_body === '' ? h('p', { class: 'hint' }, 'No body.') : textBlock([blockText(t.response_body)], `${label}: body`);
  // the bytes as stored, whatever the body is (text cut for display, bytes no text view shows)
  const download = h('a', { href: api.bodyUrl(t.target_id, t.id), download: '' }, `Download the body of #${t.id}`);
  const cut =
    t.response_size === 0 && !t.binary_response
      ? null
      : t.response_body_truncated
        ? h('p', { class: 'hint' }, `The body is longer than shown (${size(t.response_size)} received). `, download, '.')
        : h('p', { class: 'hint' }, download, ` (${size(t.response_size)}).`);
  return h(
    'div',
    { class: 'response' },
    h('p', { class: 'status-line' }, h('span', { class: statusClass(t.response_status) }, t.response_status || 'no answer'), ` ${size(t.response_size)} · ${duration(t.time)}`),
    textBlock([headText(t.response_headers)], `${label}: headers`),
    body,
    cut,
  );
}

export function transactionView({ root, params, signal }: ViewContext): void {
  const target = Number(params.id);
  const id = Number(params.tx);
  const heading = viewHeading(`Transaction #${id}`)[0];
  const back = h('a', { href: `/targets/${target}/transactions${sessionStorage.getItem(listQueryKey(target)) ? `?${sessionStorage.getItem(listQueryKey(target))}` : ''}` }, '← Back to the list');
  const status = h('div', { class: 'list-region' }, loadingState('Loading the transaction…'));
  append(root, [heading, targetNav(target, 'transactions'), h('p', {}, back), status]);

  async function load(): Promise<void> {
    try {
      const t = await api.transaction(target, id, SHOWN_BODY, signal);
      // shown first: should showing it fail, the error goes where the loading state still is
      show(t);
      status.remove();
    } catch (err) {
      if (isAbort(err)) return;
      if (isGone(err, 'target')) {
        replace(heading, 'Target not found');
        replace(status, targetGoneState(target));
      } else if (isGone(err, 'transaction')) {
        replace(heading, 'Transaction not found');
        replace(status, h('div', { class: 'state error', role: 'alert' }, h('p', { class: 'state-title' }, `Target ${target} has no transaction #${id}.`), h('p', {}, 'It may have been deleted. ', h('a', { href: `/targets/${target}/transactions` }, 'Show the transactions'), '.')));
      } else replace(status, errorState(err, () => void load()));
    }
  }

  function show(t: Transaction): void {
    replace(heading, `#${t.id} `, h('span', { class: 'method' }, t.method), ' ', h('span', { class: 'target-name' }, t.url));
    setTitle(`#${t.id} `, `${t.method} ${t.url}`);
    let cookies = 0;
    try {
      cookies = (JSON.parse(t.session_tokens) as unknown[]).length;
    } catch {
      // not a list: none shown
    }
    const facts: [string, string][] = [
      ['Status', t.response_status || 'no answer'],
      ['Size', size(t.response_size)],
      ['Time', `${duration(t.time)}`],
      ['Started', new Date(t.started_at).toLocaleString()],
      ['Source', t.source],
      ['Scope', t.scope ? 'the target’s host and port' : 'out of the target’s scope'],
      ['Cookies set', String(cookies)],
      // what the target or the connection did wrong, as recorded: a tester's evidence too
      ...(t.error ? ([['Error', t.error]] as [string, string][]) : []),
      ...(t.tls_problem ? ([['Certificate', `not trusted: ${t.tls_problem}`]] as [string, string][]) : []),
      ...(t.resent ? ([['Sent', `${t.resent + 1} times by the proxy: the target may have received each`]] as [string, string][]) : []),
      ...(t.request_body_truncated ? ([['Request body', `${t.request_size === undefined ? '' : `${size(t.request_size)} sent, `}not shown whole here`]] as [string, string][]) : []),
    ];
    const summary = h('section', { class: 'panel tx-summary', 'aria-label': 'Summary' }, h('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, shownLines(v))])));
    const request = h('section', { class: 'tx-part', 'aria-labelledby': 'tx-request' }, h('h2', { id: 'tx-request' }, 'Request'), textBlock(requestText(t.raw_request), `Request of #${t.id}`));
    const response = h('section', { class: 'tx-part', 'aria-labelledby': 'tx-response' }, h('h2', { id: 'tx-response' }, 'Response'), responseBlock(t, `Response of #${t.id}`));
    append(root, [summary, h('div', { class: 'tx-parts' }, request, response), codeSection(t), repeater(t)]);
  }

  function codeSection(t: Transaction): HTMLElement {
    const language = h('select', { id: 'code-language' }, ...CODE_LANGUAGES.map((l) => h('option', { value: l }, LANGUAGE_NAMES[l])));
    const showButton = h('button', { type: 'submit', class: 'primary' }, 'Show the code');
    const copy = h('button', { type: 'button', hidden: true }, 'Copy');
    const out = h('div', { id: 'code-out' });
    const form = h(
      'form',
      { class: 'code-form' },
      h('div', { class: 'field' }, h('label', { for: language.id }, 'Language'), language),
      h('div', { class: 'actions' }, showButton, copy),
    );
    let code = '';
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const chosen = language.value as CodeLanguage;
      try {
        code = await busy(showButton, () => api.requestAsCode(t.target_id, t.id, chosen, signal));
        replace(out, textBlock([blockText(code)], `${LANGUAGE_NAMES[chosen]} code that sends #${t.id} again`, 'code-text'));
        copy.hidden = false;
      } catch (err) {
        if (!isAbort(err)) replace(out, h('p', { class: 'field-error' }, `Could not make the code: ${describeError(err)}`));
      }
    });
    copy.addEventListener('click', async () => {
      if (await copyText(code)) announce(`Copied the ${LANGUAGE_NAMES[language.value as CodeLanguage]} code of #${t.id}.`);
      else {
        // the block shows the code's text marked and cut (bidi.ts): what is copied by hand is the code itself
        const raw = h('textarea', { class: 'code-raw', readonly: true, rows: 8, spellcheck: 'false', 'aria-label': `The ${LANGUAGE_NAMES[language.value as CodeLanguage]} code of #${t.id}, to copy` });
        raw.value = code;
        out.append(raw);
        raw.focus();
        raw.select();
        announce('The browser refused to copy: the code is selected below, copy it by hand (Ctrl+C).', 'error');
      }
    });
    return h(
      'section',
      { class: 'panel', 'aria-labelledby': 'code-heading' },
      h('h2', { id: 'code-heading' }, 'Copy as code'),
      h('p', { class: 'hint' }, 'The code sends exactly the recorded request (method, URL, headers, body bytes) and runs nothing else, whatever the request holds.'),
      form,
      out,
    );
  }

  function repeater(t: Transaction): HTMLElement {
    const full = { method: t.method, url: t.url, headers: requestHeaderLines(t.raw_request).join('\n'), body: t.data };
    const fields = ['method', 'url', 'headers', 'body'] as const;
    // a body not shown whole (cut for the view, or stored cut) is not put in its field either
    const tooLong = fields.filter((f) => full[f].length > FIELD_MAX[f] || (f === 'body' && t.request_body_truncated));
    const recorded = { ...full };
    for (const f of tooLong) recorded[f] = '';
    const method = h('input', { id: 'rep-method', autocomplete: 'off', spellcheck: 'false', value: recorded.method });
    const url = h('input', { id: 'rep-url', type: 'url', autocomplete: 'off', spellcheck: 'false', value: recorded.url });
    const headers = h('textarea', { id: 'rep-headers', rows: 8, spellcheck: 'false' });
    headers.value = recorded.headers;
    const body = h('textarea', { id: 'rep-body', rows: 6, spellcheck: 'false', 'aria-describedby': 'rep-body-hint' });
    body.value = recorded.body;
    const sendButton = h('button', { type: 'submit', class: 'primary' }, 'Send');
    const reset = h('button', { type: 'button' }, 'Reset to the recorded request');
    const result = h('div', { id: 'rep-result', class: 'rep-result', 'aria-live': 'polite' });
    const form = h(
      'form',
      { class: 'repeater', 'aria-labelledby': 'rep-heading' },
      h('div', { class: 'rep-line' }, h('div', { class: 'field narrow' }, h('label', { for: method.id }, 'Method'), method), h('div', { class: 'field grow' }, h('label', { for: url.id }, 'URL'), url)),
      h('div', { class: 'field' }, h('label', { for: headers.id }, 'Headers, one “Name: value” a line'), headers),
      h(
        'div',
        { class: 'field' },
        h('label', { for: body.id }, 'Body'),
        body,
        h('p', { class: 'hint', id: 'rep-body-hint' }, 'Sent as UTF-8 text when changed; left as it is, the recorded bytes are sent. Host and Content-Length are set for you.'),
      ),
      ...tooLong.map((f) =>
        h(
          'p',
          { class: 'hint rep-long' },
          `The recorded ${FIELD_NAMES[f]} (${f === 'body' && t.request_body_truncated ? (t.request_size === undefined ? 'not shown whole' : size(t.request_size)) : `${num(full[f].length)} characters`}) is too long to edit here: its field is left empty, and the recorded ${FIELD_NAMES[f]} is sent unless you type another.`,
        ),
      ),
      h('div', { class: 'actions' }, sendButton, reset),
    );
    // edits not sent are lost if the tester leaves: asked first, as the configuration's and the results' are
    const guardEdits = () => {
      const edited = method.value !== recorded.method || url.value !== recorded.url || headers.value !== recorded.headers || body.value !== recorded.body;
      askBeforeLeaving(edited ? 'Your edits of the request in the repeater are not sent.' : undefined);
    };
    reset.addEventListener('click', () => {
      method.value = recorded.method;
      url.value = recorded.url;
      headers.value = recorded.headers;
      body.value = recorded.body;
      guardEdits();
    });
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      // only what the tester changed: an untouched body goes as its recorded bytes
      const edits: ReplayEdits = {};
      if (method.value !== recorded.method) edits.method = method.value;
      if (url.value !== recorded.url) edits.url = url.value;
      if (headers.value !== recorded.headers) edits.headers = headers.value;
      if (body.value !== recorded.body) edits.body = body.value;
      replace(result, loadingState('Sending…'));
      try {
        const answer = await busy(sendButton, () => api.replay(t.target_id, t.id, edits, signal));
        replace(
          result,
          h(
            'div',
            { class: 'compare' },
            h('section', { 'aria-labelledby': 'rep-original' }, h('h3', { id: 'rep-original' }, `Recorded response (#${t.id})`), responseBlock(t, `Recorded response of #${t.id}`)),
            h(
              'section',
              { 'aria-labelledby': 'rep-answer' },
              h('h3', { id: 'rep-answer' }, 'Answer now (', h('a', { href: `/targets/${answer.target_id}/transactions/${answer.id}` }, `#${answer.id}`), ')'),
              responseBlock(answer, `Answer of #${answer.id}`),
            ),
          ),
        );
        announce(`Sent: the answer is ${answer.response_status || 'empty'}, stored as #${answer.id}.`);
        // what was sent is kept, as the new transaction's request
        askBeforeLeaving(undefined);
      } catch (err) {
        if (isAbort(err)) return;
        const field = err instanceof ApiError ? Object.keys(err.data)[0] : undefined;
        const control = ({ method, url, headers, body } as Record<string, HTMLElement>)[field ?? ''];
        control?.setAttribute('aria-invalid', 'true');
        replace(result, h('p', { class: 'field-error', role: 'alert' }, err instanceof ApiError && err.status !== 0 ? err.message : describeError(err)));
        control?.focus();
      }
    });
    for (const control of [method, url, headers, body]) {
      control.addEventListener('input', () => {
        control.removeAttribute('aria-invalid');
        guardEdits();
      });
    }
    return h(
      'section',
      { class: 'panel', 'aria-labelledby': 'rep-heading' },
      h('h2', { id: 'rep-heading' }, 'Repeater'),
      h('p', { class: 'hint' }, 'Edit the request and send it again to the target (its own host and port only). The answer is stored as a new transaction and shown beside the recorded one.'),
      form,
      result,
    );
  }

  void load();
}
