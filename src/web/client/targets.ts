/**
 * The Targets view: a session's targets, a page at a time, whatever their number. Two requests
 * bring it on screen (the sessions with their counts, and the page), two more after any change.
 */
import { api, isAbort, type SessionSummary, type TargetPage } from './api.js';
import { append, fillSelectSoon, h, num, replace } from './dom.js';
import { navigate, type ViewContext } from './router.js';
import { byActiveThenNewest, loadOverview } from './state.js';
import { sessionFileActions } from './session-files.js';
import { addTargetsForm } from './target-add.js';
import { pageQuery, readListState, targetList } from './target-list.js';
import { announce, busy, describeError, errorState, loadingState, viewHeading } from './ui.js';

export function targetsView({ root, query, signal }: ViewContext): void {
  const requested = query.get('session');
  const picker = h('select', { id: 'target-session' });
  picker.addEventListener('change', () => void navigate(`/targets?session=${picker.value}`));
  const addToggle = h('button', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'add-targets' }, 'Add URLs');
  // the viewed session's files: Export, Report, Copy targets
  const files = h('div', { class: 'actions session-files' });
  const pickerRow = h('div', { class: 'panel picker', hidden: true }, h('label', { for: picker.id }, 'Session'), picker, addToggle, files);
  /** Open when the view shows an empty session, or once the user opens it; a large list comes first otherwise. */
  let adding: boolean | undefined;
  const notice = h('div', { class: 'panel notice', hidden: true });
  const status = h('div', { class: 'list-region' }, loadingState('Loading targets…'));

  const list = targetList(signal, readListState(query), (focus) => load(focus));
  const adder = addTargetsForm(signal, async () => {
    list.state.page = 1;
    await load();
  });
  function showAddForm(open: boolean): void {
    adder.form.hidden = !open;
    addToggle.setAttribute('aria-expanded', String(open));
  }
  addToggle.addEventListener('click', () => {
    adding = adder.form.hidden;
    showAddForm(adding);
    if (adding) adder.textarea.focus();
  });
  for (const el of list.elements) el.hidden = el !== list.heading;
  append(root, [...viewHeading('Targets', 'The hosts and URLs under assessment, by session.'), pickerRow, notice, adder.form, ...list.elements, status]);

  /** The sessions (counts, names) and the page, side by side: two requests. */
  async function load(focus?: () => HTMLElement | null | undefined): Promise<void> {
    status.setAttribute('aria-busy', 'true');
    const session = requested === null ? undefined : Number(requested);
    try {
      const [sessions, page] = await Promise.all([
        loadOverview(signal),
        Number.isSafeInteger(session) || session === undefined ? api.targetPage(pageQuery(list.state, session), signal) : undefined,
      ]);
      show(sessions, page);
      const target = focus?.();
      if (target?.isConnected) target.focus();
      else if (focus) list.heading.focus();
    } catch (err) {
      if (!isAbort(err)) replace(status, errorState(err, () => void load()));
    } finally {
      status.removeAttribute('aria-busy');
    }
  }

  function show(sessions: SessionSummary[], page: TargetPage | undefined): void {
    const active = sessions.find((s) => s.active);
    const viewed = requested === null ? active : sessions.find((s) => String(s.id) === requested);
    if (!viewed || !page) {
      pickerRow.hidden = adder.form.hidden = notice.hidden = true;
      list.hide();
      replace(
        status,
        h(
          'div',
          { class: 'state error', role: 'alert' },
          h('p', { class: 'state-title' }, `There is no session with id ${requested}.`),
          h('p', {}, 'It may have been deleted. ', h('a', { href: '/targets' }, 'Show the active session’s targets'), '.'),
        ),
      );
      return;
    }
    replace(status);
    fillSelectSoon(picker, () =>
      [...sessions].sort(byActiveThenNewest).map((s) =>
        h('option', { value: s.id, selected: s.id === viewed.id }, `${s.name}${s.active ? ' (active)' : ''} · ${num(s.target_count)} ${s.target_count === 1 ? 'target' : 'targets'}`),
      ),
    );
    pickerRow.hidden = false;
    replace(files, ...sessionFileActions(viewed));
    adder.setSession(viewed);
    adding ??= viewed.target_count === 0;
    showAddForm(adding);
    notice.hidden = viewed.active;
    if (!viewed.active) replace(notice, ...inactiveNotice(viewed, active));
    list.show(viewed, sessions, page);
  }

  function inactiveNotice(session: SessionSummary, active: SessionSummary | undefined): Node[] {
    const button = h('button', { type: 'button' }, `Activate ${session.name}`);
    button.addEventListener('click', async () => {
      try {
        await busy(button, () => api.activateSession(session.id));
        announce(`“${session.name}” is now the active session.`);
        await load(() => adder.textarea);
      } catch (err) {
        announce(`Could not activate “${session.name}”: ${describeError(err)}`, 'error');
      }
    });
    const text = `“${session.name}” is not the active session${active ? ` (“${active.name}” is)` : ''}. You can still add, attach and detach its targets here.`;
    return [h('p', {}, text), button];
  }

  void load();
}
