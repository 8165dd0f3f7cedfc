/**
 * The Workers view: each worker live (what it runs, for how long), pause, resume, abort, add and
 * remove. The list is asked again every 1.5 s while the tab is seen (the progress every 15 s, or 6 s
 * after a change), and
 * only the rows whose worker changed are drawn again; the clocks tick in the page.
 */
import { api, ApiError, isAbort, type Progress, type Worker } from './api.js';
import { append, count, h, num, replace } from './dom.js';
import type { ViewContext } from './router.js';
import { announce, busy, confirmDialog, describeError, errorState, loadingState, viewHeading } from './ui.js';

const POLL_MS = 1500;
/**
 * The progress is asked every this many polls, or every PROGRESS_SOONER when a worker changed
 * (a run began or ended): with the health check, under a request a second.
 */
const PROGRESS_EVERY = 10;
const PROGRESS_SOONER = 4;

/** `1 min 05 s` */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h} h ${String(m).padStart(2, '0')} min`;
  if (m > 0) return `${m} min ${String(sec).padStart(2, '0')} s`;
  return `${sec} s`;
}

/** When each run was first seen, for a start time that cannot be read in this browser's clock. */
const firstSeen = new Map<string, number>();

/**
 * When the worker's run began: `started_at` (ISO 8601, asked for with include=started_at); else
 * `start_time`, the server's local time without a zone, read as this browser's (the same box, or
 * the same zone), and a time in the future (another zone) falls back to when this page first saw
 * the run.
 */
function startedAt(worker: Worker): number | undefined {
  if (!worker.busy || worker.start_time === 'NA') return undefined;
  if (worker.started_at) return Date.parse(worker.started_at);
  const key = `${worker.id} ${worker.start_time}`;
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(worker.start_time);
  const local = m ? new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]).getTime() : NaN;
  if (!Number.isNaN(local) && local <= Date.now() + 2000) return local;
  if (!firstSeen.has(key)) firstSeen.set(key, Date.now());
  return firstSeen.get(key);
}

function stateOf(worker: Worker): { word: string; cls: string } {
  if (worker.paused) return { word: worker.busy ? 'Paused' : 'Paused (idle)', cls: 'paused' };
  return worker.busy ? { word: 'Running', cls: 'running' } : { word: 'Idle', cls: 'idle' };
}

interface Row {
  el: HTMLElement;
  signature: string;
  clock?: HTMLElement;
  since?: number;
}

function workerCard(worker: Worker): Row {
  const { word, cls } = stateOf(worker);
  const since = startedAt(worker);
  const clock = h('span', { class: 'clock' }, since === undefined ? '' : duration(Date.now() - since));
  const [target, plugin] = worker.work;
  const running = target && plugin;
  const el = h(
    'li',
    { class: `card worker is-${cls}`, 'data-worker-id': worker.id },
    h('div', { class: 'worker-head' }, h('h3', {}, worker.name), h('span', { class: `state-badge ${cls}` }, word)),
    running
      ? h(
          'p',
          { class: 'worker-work' },
          h('span', { class: 'code' }, plugin.code), ` ${plugin.title} (${plugin.type}) on `,
          h('a', { href: `/targets/${target.id}` }, target.target_url),
        )
      : h('p', { class: 'worker-work muted' }, worker.paused ? 'Takes no new work until resumed.' : 'Waiting for work.'),
    running ? h('p', { class: 'hint' }, 'For ', clock, worker.worker ? ` · program pid ${worker.worker}` : '') : null,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'small', 'data-action': worker.paused ? 'resume' : 'pause', 'aria-label': `${worker.paused ? 'Resume' : 'Pause'} ${worker.name}` }, worker.paused ? 'Resume' : 'Pause'),
      running && h('button', { type: 'button', class: 'small danger', 'data-action': 'abort', 'aria-label': `Abort the run of ${worker.name}` }, 'Abort run'),
      h('button', { type: 'button', class: 'small danger', 'data-action': 'remove', 'aria-label': `Remove ${worker.name}` }, 'Remove'),
    ),
  );
  return { el, signature: JSON.stringify(worker), clock: running ? clock : undefined, since };
}

export function workersView({ root, signal }: ViewContext): void {
  const progress = h('p', { class: 'progress-line', id: 'worker-progress', 'aria-live': 'polite' });
  const add = h('button', { type: 'button', class: 'primary' }, 'Add a worker');
  const pauseAll = h('button', { type: 'button' }, 'Pause all');
  const resumeAll = h('button', { type: 'button' }, 'Resume all');
  const abortAll = h('button', { type: 'button', class: 'danger' }, 'Abort all runs');
  const tools = h('div', { class: 'panel actions worker-actions', role: 'group', 'aria-label': 'Every worker' }, add, pauseAll, resumeAll, abortAll, progress);
  const heading = h('h2', { id: 'workers-heading', tabindex: '-1' }, 'Workers');
  const list = h('ul', { class: 'cards worker-list', 'aria-labelledby': heading.id });
  const status = h('div', { class: 'list-region' }, loadingState('Loading the workers…'));
  append(root, [...viewHeading('Workers', 'Each worker takes the oldest active work from the worklist and runs it. The list follows them live.'), tools, heading, status, list]);

  const rows = new Map<number, Row>();
  let workers: Worker[] = [];
  let polls = 0;
  let lastProgress = 0;
  let changed = false;
  let timer: number | undefined;

  function showProgress(p: Progress): void {
    replace(progress, `${count(p.complete_count, 'run')} complete, ${num(p.left_count)} left (queued or running).`);
  }

  /** Draws only what changed: a new row, a changed row, a removed row. */
  function render(next: Worker[]): void {
    workers = next;
    replace(heading, `Workers (${num(next.length)})`);
    const seen = new Set<number>();
    let before: Element | null = list.firstElementChild;
    for (const worker of next) {
      seen.add(worker.id);
      const signature = JSON.stringify(worker);
      let row = rows.get(worker.id);
      if (!row || row.signature !== signature) {
        if (row) changed = true;
        const fresh = workerCard(worker);
        // a button that had the focus keeps it in the new row (the same place: Pause becomes Resume)
        const buttons = row ? [...row.el.querySelectorAll('button')] : [];
        const focused = buttons.indexOf(document.activeElement as HTMLButtonElement);
        if (row) {
          row.el.replaceWith(fresh.el);
          if (before === row.el) before = fresh.el;
        }
        row = fresh;
        rows.set(worker.id, row);
        if (focused !== -1) {
          const again = row.el.querySelectorAll('button');
          again[Math.min(focused, again.length - 1)]?.focus();
        }
      }
      if (row.el !== before) list.insertBefore(row.el, before);
      before = row.el.nextElementSibling;
    }
    for (const [id, row] of rows) {
      if (seen.has(id)) continue;
      changed = true;
      row.el.remove();
      rows.delete(id);
    }
    const any = next.length > 0;
    for (const b of [pauseAll, resumeAll]) b.disabled = !any;
    abortAll.disabled = !next.some((w) => w.busy);
  }

  function tick(): void {
    const now = Date.now();
    for (const row of rows.values()) if (row.clock && row.since !== undefined) row.clock.textContent = duration(now - row.since);
  }

  async function poll(now = false): Promise<void> {
    window.clearTimeout(timer);
    polls++;
    const since = polls - lastProgress;
    const withProgress = now || since >= PROGRESS_EVERY || (changed && since >= PROGRESS_SOONER);
    if (withProgress) {
      lastProgress = polls;
      changed = false;
    }
    try {
      const [next, p] = await Promise.all([api.workers(signal), withProgress ? api.progress(signal) : undefined]);
      status.hidden = true;
      render(next);
      if (p) showProgress(p);
    } catch (err) {
      if (isAbort(err)) return;
      status.hidden = false;
      replace(status, errorState(err, () => void poll(true)));
      // logged out: the login form is up, and logging in draws the view again
      if (err instanceof ApiError && err.status === 401) return;
    }
    schedule();
  }

  function schedule(): void {
    window.clearTimeout(timer);
    if (signal.aborted) return;
    // a tab in the background asks nothing; it catches up when it is seen again
    timer = window.setTimeout(() => (document.hidden ? schedule() : void poll()), POLL_MS);
  }

  const clock = window.setInterval(tick, 1000);
  const onVisible = () => {
    if (!document.hidden) void poll(true);
  };
  document.addEventListener('visibilitychange', onVisible);
  signal.addEventListener('abort', () => {
    window.clearTimeout(timer);
    window.clearInterval(clock);
    document.removeEventListener('visibilitychange', onVisible);
  });

  async function act(button: HTMLButtonElement, action: () => Promise<unknown>, done: string): Promise<void> {
    try {
      await busy(button, action);
      announce(done);
    } catch (err) {
      announce(describeError(err), 'error');
    }
    await poll(true);
  }

  add.addEventListener('click', () => void act(add, api.addWorker, 'One more worker.'));
  pauseAll.addEventListener('click', () => void act(pauseAll, () => api.workerAction(0, 'pause'), 'Every worker is paused: running programs are stopped, and no new work is taken.'));
  resumeAll.addEventListener('click', () => void act(resumeAll, () => api.workerAction(0, 'resume'), 'Every worker is resumed.'));
  abortAll.addEventListener('click', async () => {
    const busyCount = workers.filter((w) => w.busy).length;
    const ok = await confirmDialog({ title: `Abort ${count(busyCount, 'run')}?`, message: 'Each program is ended; what it wrote so far is kept as an Aborted output.', confirm: 'Abort all runs' });
    if (ok) await act(abortAll, () => api.workerAction(0, 'abort'), 'Every run is aborted.');
  });

  list.addEventListener('click', async (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action]');
    const id = Number(button?.closest<HTMLElement>('[data-worker-id]')?.dataset.workerId);
    const worker = workers.find((w) => w.id === id);
    if (!button || !worker) return;
    const action = button.dataset.action;
    if (action === 'remove') {
      if (worker.busy && !(await confirmDialog({ title: `Remove ${worker.name}?`, message: 'Its run is aborted first.', confirm: 'Abort and remove' }))) return;
      await act(button, () => api.removeWorker(id), `${worker.name} removed.`);
      heading.focus();
    } else if (action === 'abort') {
      await act(button, () => api.workerAction(id, 'abort'), `The run of ${worker.name} is aborted.`);
    } else if (action === 'pause' || action === 'resume') {
      await act(button, () => api.workerAction(id, action), `${worker.name} ${action === 'pause' ? 'paused' : 'resumed'}.`);
    }
  });

  void poll(true);
}
