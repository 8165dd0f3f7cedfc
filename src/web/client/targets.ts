/** The Targets view: a session's targets with their derived fields; add, attach, detach, delete. */
import { api, ApiError, isAbort, type Session, type Target } from './api.js';
import { append, h, plural, replace } from './dom.js';
import { navigate, type ViewContext } from './router.js';
import { loadOverview, sessionsOf, type Overview } from './state.js';
import { announce, busy, confirmDialog, describeError, emptyState, errorState, loadingState, viewHeading } from './ui.js';

interface AddResult {
  url: string;
  error?: string;
}

function urlErrorText(err: unknown): string {
  if (err instanceof ApiError && err.status === 400) return 'Not an absolute http:// or https:// URL.';
  if (err instanceof ApiError && err.status === 409) return 'Already in this session.';
  return describeError(err);
}

function fact(term: string, value: string, muted = false): HTMLElement[] {
  return [h('dt', {}, term), h('dd', muted ? { class: 'muted' } : {}, value)];
}

export function targetsView({ root, query, signal }: ViewContext): void {
  const picker = h('select', { id: 'target-session' });
  picker.addEventListener('change', () => void navigate(`/targets?session=${picker.value}`));
  const pickerRow = h('div', { class: 'panel picker', hidden: true }, h('label', { for: picker.id }, 'Session'), picker);

  const urls = h('textarea', { id: 'target-urls', rows: '3', spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'target-urls-hint' });
  const urlsHint = h('p', { id: 'target-urls-hint', class: 'hint' });
  const addButton = h('button', { type: 'submit', class: 'primary' }, 'Add targets');
  const results = h('ul', { class: 'add-results', 'aria-live': 'polite' });
  const addForm = h(
    'form',
    { class: 'panel add-targets', novalidate: true, hidden: true, 'aria-label': 'Add targets' },
    h('label', { for: urls.id }, 'Target URLs, one per line'),
    urls,
    urlsHint,
    h('div', { class: 'form-actions' }, addButton, h('span', { class: 'hint' }, 'Ctrl+Enter adds too.')),
    results,
  );
  const notice = h('div', { class: 'panel notice', hidden: true });
  const listHeading = h('h2', { tabindex: '-1' }, 'Targets');
  const list = h('div', { class: 'list-region', 'aria-live': 'polite' }, loadingState('Loading targets…'));
  append(root, [...viewHeading('Targets', 'The hosts and URLs under assessment, by session.'), pickerRow, notice, addForm, listHeading, list]);

  let viewed: Session | undefined;

  async function load(focus?: () => HTMLElement | null | undefined): Promise<void> {
    list.setAttribute('aria-busy', 'true');
    try {
      const overview = await loadOverview(signal);
      show(overview);
      focus?.()?.focus();
    } catch (err) {
      if (!isAbort(err)) replace(list, errorState(err, () => void load()));
    } finally {
      list.removeAttribute('aria-busy');
    }
  }

  function show(overview: Overview): void {
    const requested = query.get('session');
    viewed = requested === null ? overview.sessions.find((s) => s.active) : overview.sessions.find((s) => String(s.id) === requested);
    const active = overview.sessions.find((s) => s.active);
    if (!viewed) {
      pickerRow.hidden = addForm.hidden = notice.hidden = true;
      replace(listHeading, 'Targets');
      replace(
        list,
        h(
          'div',
          { class: 'state error', role: 'alert' },
          h('p', { class: 'state-title' }, `There is no session with id ${requested}.`),
          h('p', {}, 'It may have been deleted. ', h('a', { href: '/targets' }, 'Show the active session’s targets'), '.'),
        ),
      );
      return;
    }
    replace(
      picker,
      ...overview.sessions.map((s) =>
        h('option', { value: s.id, selected: s.id === viewed!.id }, `${s.name}${s.active ? ' (active)' : ''} · ${plural(overview.targets.get(s.id)?.length ?? 0, 'target')}`),
      ),
    );
    pickerRow.hidden = false;
    addForm.hidden = !viewed.active;
    replace(urlsHint, `Absolute http:// or https:// URLs. They are added to “${viewed.name}”, the active session.`);
    notice.hidden = viewed.active;
    if (!viewed.active) replace(notice, ...inactiveNotice(viewed, active));

    const targets = overview.targets.get(viewed.id) ?? [];
    replace(listHeading, `Targets in “${viewed.name}” (${targets.length})`);
    if (targets.length === 0) {
      const hint = viewed.active ? 'Add URLs above.' : 'Attach targets to it from another session, or activate it and add URLs.';
      replace(list, emptyState('No targets in this session yet.', hint));
      return;
    }
    replace(list, h('ul', { class: 'cards target-list' }, ...targets.map((t) => targetCard(t, overview, viewed!))));
  }

  function inactiveNotice(session: Session, active: Session | undefined): Node[] {
    const button = h('button', { type: 'button' }, `Activate ${session.name}`);
    button.addEventListener('click', async () => {
      try {
        await busy(button, () => api.activateSession(session.id));
        announce(`“${session.name}” is now the active session.`);
        await load(() => urls);
      } catch (err) {
        announce(`Could not activate “${session.name}”: ${describeError(err)}`, 'error');
      }
    });
    const text = `“${session.name}” is not the active session. New targets are added to the active session${active ? `, “${active.name}”` : ''}.`;
    return [h('p', {}, text), button];
  }

  function targetCard(target: Target, overview: Overview, session: Session): HTMLElement {
    const holders = sessionsOf(overview, target.id);
    const others = overview.sessions.filter((s) => !holders.includes(s));
    const headingId = `target-${target.id}-url`;
    const deleteButton = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete target ${target.target_url}` }, 'Delete target');
    deleteButton.addEventListener('click', () => void removeTarget(target, holders.length, deleteButton));
    return h(
      'li',
      { class: 'card target', 'data-target-id': target.id },
      h('h3', { id: headingId, class: 'target-url', tabindex: '-1' }, target.target_url),
      h(
        'dl',
        { class: 'facts' },
        ...fact('Host', target.host_name),
        ...fact('Port', target.port_number),
        ...fact('Scheme', target.url_scheme),
        ...fact('IP', target.host_ip || 'not resolved', !target.host_ip),
      ),
      h(
        'div',
        { class: 'memberships' },
        h('span', { class: 'label', id: `target-${target.id}-in` }, 'In sessions'),
        h(
          'ul',
          { class: 'chips', 'aria-labelledby': `target-${target.id}-in` },
          ...holders.map((s) => {
            const detach = h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Detach from ${s.name}`, title: `Detach from ${s.name}` }, '×');
            detach.addEventListener('click', () => void detachTarget(target, s, holders.length, session, detach));
            return h('li', { class: s.id === session.id ? 'chip current' : 'chip' }, h('span', {}, s.name), detach);
          }),
        ),
      ),
      others.length > 0 && attachForm(target, others, headingId),
      h('div', { class: 'actions' }, deleteButton),
    );
  }

  function attachForm(target: Target, others: Session[], headingId: string): HTMLElement {
    const id = `attach-${target.id}`;
    const select = h('select', { id, 'aria-describedby': headingId }, ...others.map((s) => h('option', { value: s.id }, s.name)));
    const button = h('button', { type: 'submit' }, 'Attach');
    const form = h('form', { class: 'attach' }, h('label', { for: id }, 'Attach to'), select, button);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const to = others.find((s) => String(s.id) === select.value)!;
      try {
        await busy(button, () => api.attachTarget(to.id, target.id));
        announce(`Attached ${target.target_url} to “${to.name}”.`);
      } catch (err) {
        announce(`Could not attach ${target.target_url}: ${describeError(err)}`, 'error');
      }
      await load(() => document.getElementById(headingId));
    });
    return form;
  }

  async function detachTarget(target: Target, from: Session, holders: number, session: Session, button: HTMLButtonElement): Promise<void> {
    if (holders === 1) {
      const confirmed = await confirmDialog({
        title: `Detach ${target.target_url}?`,
        message: `It is in no other session than “${from.name}”, so the server deletes it.`,
        confirm: 'Detach and delete',
      });
      if (!confirmed) return;
    }
    try {
      await busy(button, () => api.detachTarget(from.id, target.id));
      announce(`Detached ${target.target_url} from “${from.name}”.`);
    } catch (err) {
      announce(`Could not detach ${target.target_url}: ${describeError(err)}`, 'error');
    }
    const stays = from.id !== session.id;
    await load(() => (stays ? document.getElementById(`target-${target.id}-url`) : listHeading));
  }

  async function removeTarget(target: Target, holders: number, button: HTMLButtonElement): Promise<void> {
    const confirmed = await confirmDialog({
      title: `Delete target ${target.target_url}?`,
      message: holders > 1 ? `It is removed from all ${holders} sessions that hold it.` : 'It is removed from its session.',
      confirm: 'Delete target',
    });
    if (!confirmed) return;
    try {
      await busy(button, () => api.deleteTarget(target.id));
      announce(`Deleted ${target.target_url}.`);
    } catch (err) {
      announce(`Could not delete ${target.target_url}: ${describeError(err)}`, 'error');
    }
    await load(() => listHeading);
  }

  function showResults(added: AddResult[]): void {
    replace(
      results,
      ...added.map((r) =>
        h(
          'li',
          { class: r.error ? 'result failed' : 'result added' },
          h('span', { class: 'result-mark', 'aria-hidden': 'true' }, r.error ? '✕' : '✓'),
          h('span', { class: 'result-url' }, r.url),
          h('span', { class: 'result-text' }, r.error ?? 'added'),
        ),
      ),
    );
  }

  // One request per URL: the server takes a batch all or nothing, and the user wants to know which line failed.
  async function addTargets(): Promise<void> {
    const lines = urls.value.split('\n').map((line) => line.trim()).filter(Boolean);
    if (lines.length === 0) {
      showResults([{ url: '', error: 'Enter at least one URL.' }]);
      urls.focus();
      return;
    }
    const done = await busy(addButton, async () => {
      const out: AddResult[] = [];
      for (const url of lines) {
        try {
          await api.addTarget(url);
          out.push({ url });
        } catch (err) {
          out.push({ url, error: urlErrorText(err) });
        }
      }
      return out;
    });
    const failed = done.filter((r) => r.error);
    urls.value = failed.map((r) => r.url).join('\n');
    urls.setAttribute('aria-invalid', String(failed.length > 0));
    showResults(done);
    const added = done.length - failed.length;
    announce(`${plural(added, 'target')} added${failed.length ? `, ${failed.length} refused: see the list under the form` : ''}.`, failed.length ? 'error' : 'info');
    await load(() => urls);
  }

  addForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void addTargets();
  });
  urls.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      addForm.requestSubmit();
    }
  });

  void load();
}
