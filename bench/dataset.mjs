// @ts-check
/**
 * Data directories for the benchmark, written straight to disk (creating 100,000 sessions over
 * HTTP, one durable write each, would take minutes). Only this file knows the store's on-disk
 * format: if the store changes (say, a journal beside the snapshot), adapt `writeDataDir`.
 */
import { mkdirSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * @typedef {object} DatasetSpec
 * @property {number} sessions how many sessions (names s1..sN; the last one is active)
 * @property {number} [targetsPerSession] targets attached to each session (each its own URL)
 */

/** @param {number} id */
function target(id) {
  const host = `h${id}.example`;
  return {
    id,
    target_url: `http://${host}/`,
    host_name: host,
    host_ip: '',
    port_number: '80',
    url_scheme: 'http',
    host_path: `${host}/`,
    ip_url: '',
    top_domain: 'example',
    top_url: `http://${host}:80`,
    alternative_ips: [],
    scope: true,
    max_user_rank: -1,
    max_owtf_rank: -1,
  };
}

/**
 * Writes the store's files for `spec` into `dir` (created if need be). The configuration is left
 * out: the server writes it from its defaults on its first start.
 * @param {string} dir
 * @param {DatasetSpec} spec
 * @returns {{ files: Record<string, number> }} file sizes in bytes
 */
export function writeDataDir(dir, spec) {
  mkdirSync(dir, { recursive: true });
  const perSession = spec.targetsPerSession ?? 0;
  const sessions = [];
  const targets = [];
  let nextTarget = 1;
  for (let id = 1; id <= spec.sessions; id++) {
    const ids = [];
    for (let k = 0; k < perSession; k++) {
      targets.push(target(nextTarget));
      ids.push(nextTarget++);
    }
    sessions.push({ id, name: `s${id}`, targets: ids });
  }
  const doc = {
    version: 1,
    nextSessionId: spec.sessions + 1,
    activeSessionId: spec.sessions,
    nextTargetId: nextTarget,
    sessions,
    targets,
  };
  const file = join(dir, 'sessions.json');
  writeFileSync(file, JSON.stringify(doc));
  return { files: { 'sessions.json': statSync(file).size } };
}
