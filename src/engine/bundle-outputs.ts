/** A session's bundle with its targets' outputs and their text, as `GET /api/v1/bundles/<id>` and `assessd export` write it. */
import { bundlePieces, snapshotSession } from '../store/bundle.js';
import type { State } from '../store/state.js';
import type { Catalogue } from './catalogue.js';
import { outputText } from './output-text.js';
import { pace } from './pace.js';

/** Where an output's text comes from: the catalogue (checklists, links) and the run files under `outputsDir`. */
export interface OutputSources {
  catalogue: Catalogue;
  outputsDir: string;
}

/**
 * The bundle as JSON text, or undefined for an unknown session. The session is copied at once,
 * then the texts are read (one file at a time: a large session never holds many open), then the
 * document is built from the copy: what the file says is one instant's state.
 */
export async function exportSession(
  state: State,
  sources: OutputSources | undefined,
  sessionId: number,
  now: () => Date = () => new Date(),
  transactionsOf?: (targets: number[]) => Promise<Map<number, unknown[]>>,
): Promise<{ name: string; text: string } | undefined> {
  const snapshot = snapshotSession(state, sessionId);
  if (!snapshot) return undefined;
  const texts = new Map<number, string>();
  for (const { outputs } of snapshot.targets) {
    // without an engine (a server that runs no plugins) only the stored text is known
    for (const row of outputs) texts.set(row.id, sources ? await outputText(state, sources.catalogue, sources.outputsDir, row) : (row.summary ?? ''));
  }
  const transactions = transactionsOf ? await transactionsOf(snapshot.targets.map(({ target }) => target.id)) : undefined;
  // built a piece at a time, the event loop's turn between slices (the server answers meanwhile)
  const pieces: string[] = [];
  const tick = pace();
  for (const piece of bundlePieces(snapshot, texts, now(), transactions)) {
    pieces.push(piece);
    await tick(1 + (piece.length >> 13));
  }
  return { name: snapshot.name, text: pieces.join('') };
}
