/**
 * The Plugins view: the catalogue by group and type, filtered by code or name; the plugins ticked
 * (one by one, or a whole group or type) are queued on the targets selected in the Targets view,
 * or on every target of the active session. Two requests bring it on screen.
 */
import { api, ApiError, isAbort, type Plugin, type SessionSummary } from './api.js';
import { append, count, h, num, replace } from './dom.js';
import { replaceQuery, type ViewContext } from './router.js';
import { selectedCount, targetSelection } from './selection.js';
import { loadOverview, loadPlugins } from './state.js';
import { announce, busy, describeError, errorState, loadingState, viewHeading } from './ui.js';

const GROUP_NAMES: Record<string, string> = { web: 'Web', network: 'Network', auxiliary: 'Auxiliary' };
const TYPE_NAMES: Record<string, string> = {
  external: 'External (manual checklists)',
  passive: 'Passive (public sources, no request)',
  semi_passive: 'Semi-passive (ordinary requests)',
  active: 'Active (tools on this box)',
  grep: 'Grep (stored transactions, no request)',
  bruteforce: 'Brute force',
};

const label = (name: string) => name.replace(/_/g, '-');

interface TypeBlock {
  group: string;
  type: string;
  plugins: Plugin[];
  toggle: HTMLInputElement;
  fieldset: HTMLElement;
  rows: { plugin: Plugin; el: HTMLElement; box: HTMLInputElement; text: string }[];
}

export function pluginsView({ root, query, signal }: ViewContext): void {
  const status = h('div', { class: 'list-region' }, loadingState('Loading the plugins…'));
  append(root, [
    ...viewHeading('Plugins', 'Tick plugins, choose the targets, and queue them: the workers run the queue, and each run’s output is listed in its target’s results.'),
    status,
  ]);

  async function load(): Promise<void> {
    try {
      const [sessions, plugins] = await Promise.all([loadOverview(signal), loadPlugins(signal)]);
      replace(status);
      show(sessions, plugins);
    } catch (err) {
      if (!isAbort(err)) replace(status, errorState(err, () => void load()));
    }
  }

  function show(sessions: SessionSummary[], plugins: Plugin[]): void {
    const active = sessions.find((s) => s.active);
    const selected = selectedCount(targetSelection);
    const selectionSession = targetSelection.all && sessions.find((s) => s.id === targetSelection.all!.session);

    // Targets: the selection carried over from the Targets view, or the whole active session
    const useSelection = h('input', { type: 'radio', name: 'run-on', id: 'run-on-selection', value: 'selection', checked: selected > 0, disabled: selected === 0 });
    const useSession = h('input', { type: 'radio', name: 'run-on', id: 'run-on-session', value: 'session', checked: selected === 0 });
    const picked = [...targetSelection.ids.values()];
    const selectionText = targetSelection.all
      ? `All ${count(selected, 'target')} of “${selectionSession?.name ?? `session ${targetSelection.all.session}`}”${targetSelection.all.q ? ` matching “${targetSelection.all.q}”` : ''}`
      : selected === 0
        ? 'No target is selected in the Targets view'
        : `The ${count(selected, 'target')} selected in the Targets view`;
    const targetsPanel = h(
      'fieldset',
      { class: 'panel run-on' },
      h('legend', {}, 'Targets to run them on'),
      h(
        'div',
        { class: 'choice' },
        useSelection,
        h('label', { for: useSelection.id }, selectionText),
        picked.length > 0 &&
          h(
            'p',
            { class: 'hint target-sample' },
            picked.slice(0, 4).map((t) => t.target_url).join(', '),
            picked.length > 4 ? ` and ${num(picked.length - 4)} more` : '',
          ),
        h('p', { class: 'hint' }, h('a', { href: '/targets' }, selected > 0 ? 'Change the selection' : 'Select targets'), ' in the Targets view.'),
      ),
      h(
        'div',
        { class: 'choice' },
        useSession,
        h('label', { for: useSession.id }, active ? `Every target of the active session “${active.name}” (${count(active.target_count, 'target')})` : 'Every target of the active session'),
      ),
    );

    // The catalogue, by group then type
    const filter = h('input', { id: 'plugin-filter', type: 'search', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. IG-004 or cookies', value: query.get('q') ?? '' });
    const shown = h('p', { class: 'hint', id: 'plugin-count', 'aria-live': 'polite' });
    const toolbar = h(
      'div',
      { class: 'panel toolbar', role: 'search', 'aria-label': 'Plugins' },
      h('div', { class: 'field grow' }, h('label', { for: filter.id }, 'Filter by code or name'), filter),
      shown,
    );
    const blocks: TypeBlock[] = [];
    const groupToggles: { group: string; toggle: HTMLInputElement }[] = [];
    const catalogue = h('div', { class: 'catalogue' });
    const groups = [...new Set(plugins.map((p) => p.group))];
    for (const group of groups) {
      const inGroup = plugins.filter((p) => p.group === group);
      const groupToggle = h('input', { type: 'checkbox', id: `all-${group}`, class: 'group-toggle' });
      groupToggles.push({ group, toggle: groupToggle });
      const section = h(
        'section',
        { class: 'plugin-group', 'aria-labelledby': `group-${group}` },
        h('h2', { id: `group-${group}` }, `${GROUP_NAMES[group] ?? group} plugins (${num(inGroup.length)})`),
        h('div', { class: 'check group-check' }, groupToggle, h('label', { for: groupToggle.id }, `All ${GROUP_NAMES[group] ?? group} plugins`)),
      );
      for (const type of [...new Set(inGroup.map((p) => p.type))]) {
        const ofType = inGroup.filter((p) => p.type === type);
        const toggle = h('input', { type: 'checkbox', id: `all-${group}-${type}`, class: 'type-toggle' });
        const rows = ofType.map((plugin) => {
          const id = `plugin-${label(plugin.group)}-${label(plugin.type)}-${plugin.code}`;
          const box = h('input', { type: 'checkbox', id, value: plugin.key, class: 'plugin-box' });
          const el = h(
            'li',
            { class: 'plugin' },
            box,
            h('label', { for: id }, h('span', { class: 'code' }, plugin.code), ' ', plugin.title, h('span', { class: 'visually-hidden' }, ` (${plugin.type})`)),
            plugin.descrip && plugin.descrip !== plugin.title ? h('p', { class: 'hint' }, plugin.descrip) : null,
          );
          return { plugin, el, box, text: `${plugin.code} ${plugin.name} ${plugin.title} ${plugin.key}`.toLowerCase() };
        });
        const fieldset = h(
          'fieldset',
          { class: 'plugin-type' },
          h('legend', {}, toggle, h('label', { for: toggle.id }, h('span', { class: 'visually-hidden' }, 'All of '), `${GROUP_NAMES[group] ?? group} · ${TYPE_NAMES[type] ?? type}`), h('span', { class: 'type-count' }, ` ${count(ofType.length, 'plugin')}`)),
          h('ul', { class: 'plugin-list' }, ...rows.map((r) => r.el)),
        );
        blocks.push({ group, type, plugins: ofType, toggle, fieldset, rows });
        section.append(fieldset);
      }
      catalogue.append(section);
    }

    // The queue bar: what will be queued, force_overwrite, the button, the answer
    const summary = h('p', { class: 'selection-count', id: 'queue-count', 'aria-live': 'polite' });
    const force = h('input', { type: 'checkbox', id: 'force-overwrite' });
    const queueButton = h('button', { type: 'button', class: 'primary', id: 'queue-button' }, 'Queue');
    const result = h('p', { class: 'bulk-result', id: 'queue-result', role: 'status' });
    const bar = h(
      'div',
      { class: 'panel selection-bar queue-bar', role: 'region', 'aria-label': 'Queue plugins' },
      h('div', { class: 'selection-status' }, summary),
      h(
        'div',
        { class: 'selection-actions' },
        h('div', { class: 'check' }, force, h('label', { for: force.id }, 'Run again where it already ran (replaces that output)')),
        queueButton,
      ),
      result,
    );
    append(root, [targetsPanel, toolbar, catalogue, bar]);

    const chosen = () => blocks.flatMap((b) => b.rows.filter((r) => r.box.checked).map((r) => r.plugin));
    const targetCount = () => (useSelection.checked ? selected : active?.target_count ?? 0);

    function renderChoice(): void {
      const n = chosen().length;
      const targets = targetCount();
      const mark = (toggle: HTMLInputElement, rows: TypeBlock['rows']) => {
        const on = rows.filter((r) => r.box.checked).length;
        toggle.checked = on === rows.length;
        toggle.indeterminate = on > 0 && on < rows.length;
      };
      for (const b of blocks) mark(b.toggle, b.rows);
      for (const g of groupToggles) mark(g.toggle, blocks.filter((b) => b.group === g.group).flatMap((b) => b.rows));
      replace(summary, n === 0 ? 'No plugin ticked.' : `${count(n, 'plugin')} ticked, ${count(targets, 'target')}.`);
      replace(queueButton, `Queue ${count(n, 'plugin')} on ${count(targets, 'target')}`);
      queueButton.disabled = n === 0 || targets === 0;
      bar.classList.toggle('has-selection', n > 0);
    }

    function applyFilter(): void {
      const needle = filter.value.trim().toLowerCase();
      let visible = 0;
      for (const b of blocks) {
        let inBlock = 0;
        for (const r of b.rows) {
          const match = needle === '' || r.text.includes(needle);
          r.el.hidden = !match;
          if (match) inBlock++;
        }
        b.fieldset.hidden = inBlock === 0;
        visible += inBlock;
      }
      for (const section of catalogue.querySelectorAll<HTMLElement>('.plugin-group')) section.hidden = !section.querySelector('.plugin-type:not([hidden])');
      replace(shown, visible === plugins.length ? count(plugins.length, 'plugin') : `Showing ${num(visible)} of ${count(plugins.length, 'plugin')}`);
      const next = new URLSearchParams(location.search);
      if (needle) next.set('q', filter.value.trim());
      else next.delete('q');
      replaceQuery(next);
    }

    catalogue.addEventListener('change', (event) => {
      const el = event.target as HTMLInputElement;
      const block = blocks.find((b) => b.toggle === el);
      const whole = groupToggles.find((g) => g.toggle === el);
      // a whole type or group: the plugins the filter shows
      const rows = block ? block.rows : whole ? blocks.filter((b) => b.group === whole.group).flatMap((b) => b.rows) : [];
      for (const r of rows) if (!r.el.hidden) r.box.checked = el.checked;
      renderChoice();
    });
    for (const radio of [useSelection, useSession]) radio.addEventListener('change', renderChoice);
    filter.addEventListener('input', applyFilter);

    /** The target ids to queue on: the selection's, or (one request) those of a session, filtered as selected. */
    async function targetIds(): Promise<number[]> {
      if (useSelection.checked && !targetSelection.all) return [...targetSelection.ids.keys()];
      const all = useSelection.checked ? targetSelection.all : undefined;
      const targets = await api.targetsOf(all ? all.session : active?.id, all?.q, signal);
      return targets.map((t) => t.id);
    }

    queueButton.addEventListener('click', async () => {
      if (chosen().length === 0) return;
      replace(result);
      // what was queued before a refusal is said too: the requests before it stand
      let queued = 0;
      let skipped = 0;
      try {
        await busy(queueButton, async () => {
          const ids = await targetIds();
          // one request per group and type: codes are filters, and would cross types otherwise
          for (const b of blocks) {
            const codes = b.rows.filter((r) => r.box.checked).map((r) => r.plugin.code);
            if (codes.length === 0) continue;
            const answer = await api.queueWorks({ ids, group: b.group, type: b.type, codes: codes.length === b.rows.length ? undefined : codes, force: force.checked });
            queued += answer.queued;
            // the server says how many it queued: the other pairs asked for were skipped
            skipped += ids.length * codes.length - answer.queued;
          }
        });
        const why = force.checked ? 'already queued' : 'already queued or already run; tick “Run again” to run those too';
        const text = `Queued ${num(queued)}${skipped > 0 ? `, skipped ${num(skipped)} (${why})` : ''}.`;
        replace(result, text, ' ', h('a', { href: '/worklist' }, 'See the worklist'), ' · ', h('a', { href: '/workers' }, 'the workers'));
        result.dataset.kind = 'ok';
        announce(text);
      } catch (err) {
        const gone = err instanceof ApiError && err.status === 400 && 'id' in err.data;
        const why = gone ? 'a selected target no longer exists. Select the targets again in the Targets view' : describeError(err);
        const text = `${queued > 0 ? `Queued ${num(queued)}, then stopped` : 'Nothing was queued'}: ${why}.`;
        result.dataset.kind = 'error';
        replace(result, text);
        announce(text, 'error');
      }
    });

    applyFilter();
    renderChoice();
  }

  void load();
}
