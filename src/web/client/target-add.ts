/**
 * Adding pasted URLs, however many: sent in a few batches (sized in bytes, under the server's body
 * limit) with a progress bar; only the lines refused are listed, each with why, and stay in the box.
 */
import { api, ApiError, isAbort, isGone, type SessionSummary } from './api.js';
import { count, h, num, replace } from './dom.js';
import { announce, busy, describeError } from './ui.js';

/** Well under the server's default 1 MiB body limit; a 413 (a smaller --max-body) halves a batch. */
const BATCH_BYTES = 512 * 1024;
/** Few enough requests, and still a progress bar that moves. */
const MIN_BATCH_LINES = 500;
const BATCHES = 5;
/** Refused lines listed one by one; the rest are counted (they all stay in the box). */
const MAX_LISTED = 100;

interface Line {
  /** From 1, as the user counts the lines of the box. */
  number: number;
  url: string;
}

interface Refusal extends Line {
  why: string;
}

const REASONS: Record<string, string> = {
  'invalid URL': 'Not an absolute http:// or https:// URL.',
  'already in the session': 'Already in this session.',
  'repeated in the request': 'Repeated in the list.',
};

/** Lines cut into batches of at most `maxBytes` of form body and `maxLines` lines. */
export function batches(lines: Line[], maxBytes: number, maxLines: number): Line[][] {
  const out: Line[][] = [];
  let batch: Line[] = [];
  let bytes = 0;
  for (const line of lines) {
    const size = 12 + encodeURIComponent(line.url).length; // "&target_url=" and the value
    if (batch.length > 0 && (bytes + size > maxBytes || batch.length >= maxLines)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(line);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

export interface AddForm {
  form: HTMLFormElement;
  textarea: HTMLTextAreaElement;
  setSession(session: SessionSummary): void;
}

export function addTargetsForm(signal: AbortSignal, onAdded: (added: number) => Promise<void>): AddForm {
  const urls = h('textarea', { id: 'target-urls', rows: '3', spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'target-urls-hint' });
  const hint = h('p', { id: 'target-urls-hint', class: 'hint' });
  const addButton = h('button', { type: 'submit', class: 'primary' }, 'Add targets');
  const bar = h('progress', { id: 'add-progress', max: '1', value: '0' });
  const progressText = h('span', {});
  const progress = h('div', { class: 'add-progress', role: 'status', hidden: true }, h('label', { for: bar.id }, 'Adding targets'), bar, progressText);
  const summary = h('p', { class: 'add-summary', role: 'status' });
  const results = h('ul', { class: 'add-results', 'aria-label': 'Refused lines' });
  const form = h(
    'form',
    { id: 'add-targets', class: 'panel add-targets', novalidate: true, hidden: true, 'aria-label': 'Add targets' },
    h('label', { for: urls.id }, 'Target URLs, one per line'),
    urls,
    hint,
    h('div', { class: 'form-actions' }, addButton, h('span', { class: 'hint' }, 'Ctrl+Enter adds too. Paste thousands at once if you like.')),
    progress,
    summary,
    results,
  );
  let session: SessionSummary | undefined;

  function showProgress(done: number, all: number): void {
    bar.max = all;
    bar.value = done;
    replace(progressText, `${num(done)} of ${count(all, 'line')}`);
  }

  function showRefusals(refused: Refusal[]): void {
    const listed = refused.slice(0, MAX_LISTED);
    replace(
      results,
      ...listed.map((r) =>
        h(
          'li',
          { class: 'result failed' },
          h('span', { class: 'result-mark', 'aria-hidden': 'true' }, '✕'),
          h('span', { class: 'result-line' }, `Line ${r.number}`),
          h('span', { class: 'result-url' }, r.url),
          h('span', { class: 'result-text' }, r.why),
        ),
      ),
      refused.length > MAX_LISTED && h('li', { class: 'result more' }, `…and ${count(refused.length - MAX_LISTED, 'more refused line')}, all left in the box above.`),
    );
  }

  /** Sends one batch; a 413 splits it in two and tries again. Returns the refusals. */
  async function send(to: number, batch: Line[]): Promise<{ added: number; refused: Refusal[] }> {
    try {
      const answer = await api.addTargets(to, batch.map((l) => l.url), signal);
      const refused = answer.failed.map((f) => ({ ...batch[f.index], why: REASONS[f.reason] ?? f.reason }));
      return { added: answer.added, refused };
    } catch (err) {
      if (err instanceof ApiError && err.status === 413 && batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        const a = await send(to, batch.slice(0, half));
        const b = await send(to, batch.slice(half));
        return { added: a.added + b.added, refused: [...a.refused, ...b.refused] };
      }
      throw err;
    }
  }

  async function add(): Promise<void> {
    if (!session) return;
    const to = session;
    const lines: Line[] = [];
    const refused: Refusal[] = [];
    const seen = new Set<string>();
    urls.value.split('\n').forEach((raw, i) => {
      const url = raw.trim();
      if (url === '') return;
      if (seen.has(url)) refused.push({ number: i + 1, url, why: REASONS['repeated in the request'] });
      else {
        seen.add(url);
        lines.push({ number: i + 1, url });
      }
    });
    if (lines.length === 0 && refused.length === 0) {
      replace(summary, 'Enter at least one URL.');
      replace(results);
      urls.focus();
      return;
    }
    const todo = batches(lines, BATCH_BYTES, Math.max(MIN_BATCH_LINES, Math.ceil(lines.length / BATCHES)));
    replace(summary);
    replace(results);
    progress.hidden = false;
    showProgress(0, lines.length);
    let added = 0;
    let done = 0;
    /** The session was deleted meanwhile (in another tab, or by another client). */
    let gone = false;
    await busy(addButton, async () => {
      for (const batch of todo) {
        try {
          const answer = await send(to.id, batch);
          added += answer.added;
          refused.push(...answer.refused);
        } catch (err) {
          if (isAbort(err)) return;
          // what was sent before stays added; this batch and the rest are left in the box
          gone = isGone(err, 'session');
          const why = gone ? `Not sent: the session “${to.name}” no longer exists.` : `Not sent: ${describeError(err)}`;
          for (const line of todo.slice(todo.indexOf(batch)).flat()) refused.push({ ...line, why });
          break;
        }
        done += batch.length;
        showProgress(done, lines.length);
      }
    });
    if (signal.aborted) return;
    progress.hidden = true;
    refused.sort((a, b) => a.number - b.number);
    urls.value = refused.map((r) => r.url).join('\n');
    urls.setAttribute('aria-invalid', String(refused.length > 0));
    showRefusals(refused);
    const text = gone
      ? `${added > 0 ? `${count(added, 'target')} added to “${to.name}”, then it` : `Nothing added: the session “${to.name}”`} was deleted (in another tab, or by another client). The lines not sent are kept in the box: check the session named below before adding them again.`
      : `${count(added, 'target')} added to “${to.name}”${refused.length > 0 ? `; ${count(refused.length, 'line')} refused, listed below` : ''}.`;
    replace(summary, text);
    // an error only when nothing went in: a list partly added is news, its refusals listed below
    announce(text, refused.length > 0 && added === 0 ? 'error' : 'info');
    await onAdded(added);
    urls.focus();
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void add();
  });
  urls.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  return {
    form,
    textarea: urls,
    setSession(next) {
      session = next;
      replace(hint, `Absolute http:// or https:// URLs. They are added to “${next.name}”.`);
    },
  };
}
