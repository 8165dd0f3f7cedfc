/**
 * The active session's severity panel: its outputs by effective rank (a table, and a small bar
 * chart drawn as inline SVG), and how far the assessment is (runs complete, runs left).
 */
import { api, isAbort, type Progress, type SeverityCount } from './api.js';
import { count, h, num, replace } from './dom.js';
import { rankWord } from './ranks.js';
import { describeError } from './ui.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Horizontal bars, one per rank, each labelled with its word and count (the table says the same to a screen reader). */
function chart(counts: SeverityCount[]): SVGSVGElement {
  const max = Math.max(1, ...counts.map((c) => c.value));
  const rowH = 22;
  const labelW = 70;
  const barW = 200;
  const root = svg('svg', { viewBox: `0 0 ${labelW + barW + 50} ${counts.length * rowH}`, class: 'severity-chart', 'aria-hidden': 'true', focusable: 'false' });
  counts.forEach((c, i) => {
    const y = i * rowH;
    const w = c.value === 0 ? 0 : Math.max(3, (c.value / max) * barW);
    root.append(
      svg('text', { x: 0, y: y + 15, class: 'chart-label' }, rankWord(c.id)),
      svg('rect', { x: labelW, y: y + 4, width: barW, height: rowH - 8, rx: 3, class: 'chart-track' }),
      svg('rect', { x: labelW, y: y + 4, width: w, height: rowH - 8, rx: 3, class: `chart-bar rank-fill-${c.id}` }),
      svg('text', { x: labelW + barW + 8, y: y + 15, class: 'chart-value' }, num(c.value)),
    );
  });
  return root;
}

export interface SeverityPanel {
  el: HTMLElement;
  /** Asks for the counts at once; the name of the active session may come later. */
  load(sessionName: Promise<string | undefined>): Promise<void>;
}

export function severityPanel(signal: AbortSignal): SeverityPanel {
  const heading = h('h2', { id: 'severity-heading' }, 'Findings in the active session');
  const body = h('div', { class: 'severity-body' }, h('p', { class: 'hint' }, 'Loading…'));
  const el = h('section', { class: 'panel severity', 'aria-labelledby': heading.id, id: 'severity-panel' }, heading, body);

  function show(counts: SeverityCount[], progress: Progress): void {
    const ranked = counts.reduce((n, c) => n + c.value, 0);
    const table = h(
      'table',
      { class: 'severity-table', 'aria-describedby': 'severity-note' },
      h('caption', { class: 'visually-hidden' }, 'Outputs by rank'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Rank'), h('th', { scope: 'col', class: 'num' }, 'Outputs'))),
      h('tbody', {}, ...counts.map((c) => h('tr', { 'data-rank': c.id }, h('th', { scope: 'row' }, h('span', { class: `rank rank-${c.id}` }, rankWord(c.id))), h('td', { class: 'num' }, num(c.value))))),
    );
    const total = progress.complete_count + progress.left_count;
    const bar = h('progress', { id: 'run-progress', max: Math.max(1, total), value: progress.complete_count });
    replace(
      body,
      h('div', { class: 'severity-grid' }, table, chart(counts)),
      h('p', { class: 'hint', id: 'severity-note' }, ranked === 0 ? 'No ranked output yet: unranked outputs (manual checklists, checks whose target did not answer) are not counted.' : `${count(ranked, 'ranked output')}; the tester’s rank counts where set, else the engine’s. Unranked outputs (a target that did not answer is one) are not counted.`),
      h(
        'div',
        { class: 'run-progress' },
        h('label', { for: bar.id }, 'Progress'),
        bar,
        h('span', { id: 'progress-text' }, `${count(progress.complete_count, 'run')} complete, ${num(progress.left_count)} left (queued or running)`),
      ),
    );
  }

  return {
    el,
    async load(sessionName) {
      void sessionName.then((name) => replace(heading, name ? `Findings in “${name}” (active)` : 'Findings in the active session'));
      try {
        const [counts, progress] = await Promise.all([api.severity(signal), api.progress(signal)]);
        show(counts, progress);
      } catch (err) {
        if (!isAbort(err)) replace(body, h('p', { class: 'field-error' }, `Could not load the findings: ${describeError(err)}`));
      }
    },
  };
}
