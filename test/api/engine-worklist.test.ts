/**
 * The worklist over HTTP: queueing (ids repeated or comma-separated, packed in plugin_data), the
 * errors in the contract's order of checks, skipping, listing, search, pause/resume and delete.
 * Servers have no worker unless a test says so: works stay queued while they are inspected.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ENGINE_MESSAGES as E, MESSAGES as M } from '../../src/api/messages.ts';
import { addTargets, assertFail, get, ok, queue, send, waitFor, waitForOutput } from '../helpers/engine.ts';
import { startServer, type StartOptions, type TestServer } from '../helpers/server.ts';

const A = 'http://a.example/';
const B = 'http://b.example/';
const IG1 = 'OWTF-IG-001';
const IG2 = 'OWTF-IG-002';
const external = (...codes: string[]) => ({ group: 'web', type: 'external', code: codes });

interface Work {
  id: number;
  active: boolean;
  target: { id: number; target_url: string };
  plugin: { key: string; code: string; group: string; type: string };
}

/** A fresh server (no worker) with targets a (1) and b (2). */
async function withServer(fn: (s: TestServer) => Promise<void>, options: StartOptions = {}): Promise<void> {
  const server = await startServer({ workers: 0, ...options });
  try {
    assert.deepEqual(await addTargets(server, A, B), [1, 2]);
    await fn(server);
  } finally {
    await server.close();
  }
}

const list = (s: TestServer, query = ''): Promise<Work[]> => get(s, `/api/v1/worklist/${query}`);
const pairs = (works: Work[]) => works.map((w) => `${w.target.id} ${w.plugin.key}`);

describe('POST /worklist/ queues', () => {
  test('POST answers 201 with data exactly {"queued": n}, as upstream; with details=true in the query, {"queued": n, "skipped": n} too', () =>
    withServer(async (s) => {
      assert.deepEqual(await ok(s, 'POST', '/api/v1/worklist/', { id: '1', ...external(IG1) }, 201), { queued: 1 });
      // skipped pairs change nothing of the upstream answer
      assert.deepEqual(await ok(s, 'POST', '/api/v1/worklist/', { id: '1', ...external(IG1) }, 201), { queued: 0 });
      assert.deepEqual(await ok(s, 'POST', '/api/v1/worklist/?details=true', { id: '1', ...external(IG2) }, 201), { queued: 1, skipped: 0 });
      // details alone is no argument
      assertFail(await send(s, 'POST', '/api/v1/worklist/?details=true', {}), 400, 'Arguments should not be null');
    }));

  test('a POST that skips pairs says how many and why, and what to send to run again', () =>
    withServer(
      async (s) => {
        assert.equal(await queue(s, { id: '1', ...external(IG1) }), 1);
        await waitForOutput(s, 1, `external@${IG1}`, ['Successful']);
        await waitFor('the worklist to empty', async () => (await list(s)).length === 0);
        await ok(s, 'PATCH', '/api/v1/workers/0/pause');
        assert.equal(await queue(s, { id: '1', ...external(IG2) }), 1);
        const data = await ok(s, 'POST', '/api/v1/worklist/?details=true', { id: '1,2', ...external(IG1, IG2) }, 201);
        assert.deepEqual(data, {
          queued: 2,
          skipped: 2,
          message: 'Skipped 1 already queued or running; 1 already ran: send force_overwrite=true to run it again (the new output replaces the old).',
        });
      },
      { workers: 1 },
    ));

  test('ids repeated queue every matching plugin for every target', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: ['1', '2'], ...external(IG1, IG2) }), 4);
      assert.deepEqual(pairs(await list(s)).sort(), ['1 external@OWTF-IG-001', '1 external@OWTF-IG-002', '2 external@OWTF-IG-001', '2 external@OWTF-IG-002']);
    }));

  test('ids comma-separated queue for every target', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: '1,2', ...external(IG1) }), 2);
      assert.deepEqual(pairs(await list(s)).sort(), ['1 external@OWTF-IG-001', '2 external@OWTF-IG-001']);
    }));

  test('arguments packed in plugin_data (a form-encoded string, as the upstream client sends) queue', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { plugin_data: `id=1&id=2&group=web&type=external&code=${IG1}` }), 2);
      assert.deepEqual(pairs(await list(s)).sort(), ['1 external@OWTF-IG-001', '2 external@OWTF-IG-001']);
    }));

  test('plugin_data with comma-separated ids and several codes queues them all', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { plugin_data: `id=1%2C2&group=web&type=external&code=${IG1}&code=${IG2}` }), 4);
    }));

  test('arguments in the query string queue too', () =>
    withServer(async (s) => {
      assertSuccess201(await send(s, 'POST', `/api/v1/worklist/?id=2&group=web&type=external&code=${IG2}`));
      assert.deepEqual(pairs(await list(s)), ['2 external@OWTF-IG-002']);
    }));

  test('a group alone queues every plugin of the group (all web external checklists here)', () =>
    withServer(async (s) => {
      const expected = (await get(s, '/api/v1/plugins/?group=web&type=external')).length;
      assert.equal(await queue(s, { id: '1', group: 'web', type: 'external' }), expected);
      assert.equal((await list(s)).length, expected);
    }));

  test('name, upstream\'s fourth filter, queues the plugins of that name only (each of its types), without regard to case', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: '1', name: 'spiders_robots_and_crawlers' }), 4);
      assert.deepEqual(pairs(await list(s)).sort(), ['1 external@OWTF-IG-001', '1 grep@OWTF-IG-001', '1 passive@OWTF-IG-001', '1 semi_passive@OWTF-IG-001']);
      // with the others: all of them apply
      assert.equal(await queue(s, { id: '2', name: 'Spiders_Robots_and_Crawlers', type: 'semi_passive' }), 1);
      assertFail(await send(s, 'POST', '/api/v1/worklist/', { id: '2', name: 'No_Such_Plugin' }), 400, E.pluginListEmpty);
    }));

  test('a plugin\'s name where its code goes is taken for its code, as upstream does (its name_to_code)', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: '1', type: 'external', code: ['Spiders_Robots_and_Crawlers', IG2] }), 2);
      assert.deepEqual(pairs(await list(s)).sort(), ['1 external@OWTF-IG-001', '1 external@OWTF-IG-002']);
    }));

  test('plugin_group, plugin_type, plugin_code and plugin_name (the search\'s names for the filters) filter too: such a POST never queues every plugin', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: '1', plugin_group: 'web', plugin_type: 'semi_passive' }), (await get(s, '/api/v1/plugins/?group=web&type=semi_passive')).length);
      assert.ok((await list(s)).every((w) => w.plugin.type === 'semi_passive'), 'only semi_passive works');
      assert.equal(await queue(s, { id: '2', plugin_code: IG1, plugin_type: 'external' }), 1);
      assert.equal(await queue(s, { id: '2', plugin_name: 'Spiders_Robots_and_Crawlers', plugin_type: 'passive' }), 1);
      // a group no IG-001 plugin is in: nothing matches, nothing queued (the group dropped, its four types would be)
      assertFail(await send(s, 'POST', '/api/v1/worklist/', { id: '2', plugin_group: 'network', plugin_code: IG1 }), 400, E.pluginListEmpty);
      // packed in plugin_data, as the upstream client sends its arguments
      assert.equal(await queue(s, { plugin_data: new URLSearchParams({ id: '2', plugin_type: 'grep', plugin_code: IG1 }).toString() }), 1);
      assert.deepEqual(pairs(await list(s)).filter((p) => p.startsWith('2 ')).sort(), ['2 external@OWTF-IG-001', '2 grep@OWTF-IG-001', '2 passive@OWTF-IG-001']);
    }));

  test('upstream\'s target filters (target_url, host_name, host_ip, scope) narrow the targets named by id; one that leaves none is 400 Target list should not be empty, nothing queued', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: '1,2', target_url: A, ...external(IG1) }), 1);
      assert.equal(await queue(s, { id: '1,2', host_name: 'b.example', ...external(IG1) }), 1);
      assert.equal(await queue(s, { id: '1', scope: 'true', ...external(IG2) }), 1);
      assert.deepEqual(pairs(await list(s)).sort(), ['1 external@OWTF-IG-001', '1 external@OWTF-IG-002', '2 external@OWTF-IG-001']);
      for (const form of [{ target_url: 'http://c.example/' }, { host_ip: '192.0.2.1' }, { scope: 'false' }] as Record<string, string>[]) {
        assertFail(await send(s, 'POST', '/api/v1/worklist/', { id: '1,2', ...form, ...external(IG2) }), 400, E.targetListEmpty);
      }
      assert.equal((await list(s)).length, 3);
      // a scope that is no boolean is a bad value whatever else is wrong, as force_overwrite is
      assertFail(await send(s, 'POST', '/api/v1/worklist/', { id: '1', scope: 'maybe', code: 'NOPE' }), 400, M.invalidParameterType);
    }));

  test('a pair already queued is skipped (a repeated id counts once)', () =>
    withServer(async (s) => {
      assert.equal(await queue(s, { id: ['1', '1'], ...external(IG1) }), 1);
      assert.equal(await queue(s, { id: '1,2', ...external(IG1) }), 1);
      assert.equal(await queue(s, { id: '1', ...external(IG1) }), 0);
      assert.equal(await queue(s, { id: '1', ...external(IG1), force_overwrite: 'true' }), 0, 'force_overwrite does not queue a queued pair twice');
      assert.deepEqual(pairs(await list(s)), ['1 external@OWTF-IG-001', '2 external@OWTF-IG-001']);
    }));

  test('a pair already run is skipped; force_overwrite=true queues it again and the rerun replaces its output', () =>
    withServer(
      async (s) => {
        assert.equal(await queue(s, { id: '1', ...external(IG1) }), 1);
        const first = await waitForOutput(s, 1, `external@${IG1}`, ['Successful']);
        await waitFor('the worklist to empty', async () => (await list(s)).length === 0);
        assert.equal(await queue(s, { id: '1', ...external(IG1) }), 0);
        assert.equal(await queue(s, { id: '1', ...external(IG1), force_overwrite: 'false' }), 0);
        assert.equal(await queue(s, { id: '1', ...external(IG1), force_overwrite: 'true' }), 1);
        await waitFor('the rerun', async () => {
          const all = await get(s, '/api/v1/targets/1/poutput/');
          return all.length === 1 && all[0].id !== first.id && all[0].status === 'Successful' ? all : undefined;
        });
      },
      { workers: 1 },
    ));
});

function assertSuccess201(res: { status: number; text: string }): void {
  assert.equal(res.status, 201, res.text);
}

describe('POST /worklist/ errors, in the contract\'s order of checks', () => {
  const rows: { name: string; path?: string; form?: Record<string, string | string[]>; status: number; message: string }[] = [
    { name: 'an id in the path', path: '/api/v1/worklist/1', form: { id: '1', ...external(IG1) }, status: 400, message: E.workerIdAndActionNone },
    { name: 'an id and an action in the path', path: '/api/v1/worklist/1/pause', form: { id: '1', ...external(IG1) }, status: 400, message: E.workerIdAndActionNone },
    { name: 'an id in the path, no argument', path: '/api/v1/worklist/1', status: 400, message: E.workerIdAndActionNone },
    { name: 'an action alone in the path', path: '/api/v1/worklist/pause', form: { id: '1', ...external(IG1) }, status: 400, message: E.workerIdAndActionNone },
    // search/ is the search's path (upstream's WorklistSearchHandler), not an action: a POST there is 405
    { name: 'the search path', path: '/api/v1/worklist/search/', form: { id: '1', ...external(IG1) }, status: 405, message: 'Method not allowed' },
    { name: 'no argument', status: 400, message: E.argumentsNull },
    { name: 'a target id that is not an integer', form: { id: 'abc', ...external(IG1) }, status: 400, message: M.invalidTargetReference },
    { name: 'a negative target id', form: { id: '-1', ...external(IG1) }, status: 400, message: M.invalidTargetReference },
    { name: 'a target id that is no target', form: { id: '999', ...external(IG1) }, status: 400, message: M.invalidTargetReference },
    { name: 'one bad id among good ones (comma-separated)', form: { id: '1,999', ...external(IG1) }, status: 400, message: M.invalidTargetReference },
    { name: 'one bad id among good ones (repeated)', form: { id: ['1', 'x'], ...external(IG1) }, status: 400, message: M.invalidTargetReference },
    { name: 'a bad target id before no plugin matching', form: { id: '999', code: 'NOPE-1' }, status: 400, message: M.invalidTargetReference },
    { name: 'a bad target id packed in plugin_data', form: { plugin_data: `id=999&group=web&type=external&code=${IG1}` }, status: 400, message: M.invalidTargetReference },
    { name: 'no plugin matches', form: { id: '1', code: 'NOPE-1' }, status: 400, message: E.pluginListEmpty },
    { name: 'a type not in the group matches no plugin', form: { id: '1', group: 'network', type: 'external' }, status: 400, message: E.pluginListEmpty },
    { name: 'no plugin matches, before no target', form: { code: 'NOPE-1' }, status: 400, message: E.pluginListEmpty },
    { name: 'no target', form: external(IG1), status: 400, message: E.targetListEmpty },
    { name: 'no target, packed in plugin_data', form: { plugin_data: `group=web&type=external&code=${IG1}` }, status: 400, message: E.targetListEmpty },
  ];
  for (const row of rows) {
    test(`POST ${row.path ?? '/api/v1/worklist/'} with ${row.name} is ${row.status} ${row.message}, nothing queued`, () =>
      withServer(async (s) => {
        assertFail(await send(s, 'POST', row.path ?? '/api/v1/worklist/', row.form), row.status, row.message);
        assert.deepEqual(await list(s), []);
      }));
  }
});

describe('GET /worklist/', () => {
  test('a work is exactly {id, active, target, plugin}: the target and the plugin objects', () =>
    withServer(async (s) => {
      await queue(s, { id: '2', ...external(IG1) });
      const [work] = await list(s);
      assert.deepEqual(Object.keys(work!).sort(), ['active', 'id', 'plugin', 'target']);
      assert.equal(typeof work!.id, 'number');
      assert.equal(work!.active, true);
      assert.deepEqual(work!.target, await get(s, '/api/v1/targets/2'));
      assert.deepEqual(work!.plugin, await get(s, `/api/v1/plugins/web/external/${IG1}`));
    }));

  test('the list is in queue order: older POSTs first', () =>
    withServer(async (s) => {
      await queue(s, { id: '2', ...external(IG2) });
      await queue(s, { id: '1', ...external(IG1) });
      await queue(s, { id: '2', ...external(IG1) });
      const works = await list(s);
      assert.deepEqual(pairs(works), ['2 external@OWTF-IG-002', '1 external@OWTF-IG-001', '2 external@OWTF-IG-001']);
      assert.deepEqual(works.map((w) => w.id), [...works.map((w) => w.id)].sort((a, b) => a - b));
    }));

  const filters: { query: string; expect: string[] }[] = [
    { query: `?target_url=${encodeURIComponent(A)}`, expect: ['1 external@OWTF-IG-001', '1 external@OWTF-IG-002'] },
    { query: `?target_url=${encodeURIComponent(A)}&target_url=${encodeURIComponent(B)}`, expect: ['1 external@OWTF-IG-001', '1 external@OWTF-IG-002', '2 external@OWTF-IG-001', '2 external@OWTF-IG-002'] },
    { query: `?code=${IG2}`, expect: ['1 external@OWTF-IG-002', '2 external@OWTF-IG-002'] },
    { query: '?group=web&type=external', expect: ['1 external@OWTF-IG-001', '1 external@OWTF-IG-002', '2 external@OWTF-IG-001', '2 external@OWTF-IG-002'] },
    { query: '?group=network', expect: [] },
    { query: '?type=active', expect: [] },
    { query: '?active=false', expect: ['2 external@OWTF-IG-001'] },
    { query: '?active=true&target_url=http%3A%2F%2Fb.example%2F', expect: ['2 external@OWTF-IG-002'] },
  ];
  for (const { query, expect } of filters) {
    test(`GET /worklist/${query} filters`, () =>
      withServer(async (s) => {
        await queue(s, { id: '1,2', ...external(IG1, IG2) });
        const paused = (await list(s)).find((w) => w.target.id === 2 && w.plugin.code === IG1)!;
        await ok(s, 'PATCH', `/api/v1/worklist/${paused.id}/pause`);
        assert.deepEqual(pairs(await list(s, query)).sort(), expect);
      }));
  }

  test('GET /worklist/<id> answers the work; an unknown id is 400 Invalid worker referenced', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1) });
      const works = await list(s);
      for (const work of works) {
        assert.deepEqual(await get(s, `/api/v1/worklist/${work.id}`), work);
        assert.deepEqual(await get(s, `/api/v1/worklist/${work.id}/`), work);
      }
      assertFail(await send(s, 'GET', '/api/v1/worklist/999'), 400, E.invalidWorker);
    }));

  test('GET with an action answers as without it, as upstream (a GET changes nothing): the work, or the list', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1) });
      const works = await list(s);
      for (const action of ['pause', 'resume', 'delete']) {
        assert.deepEqual(await get(s, `/api/v1/worklist/${works[0]!.id}/${action}`), works[0]);
        assert.deepEqual(await get(s, `/api/v1/worklist/${action}/`), works);
      }
      assertFail(await send(s, 'GET', '/api/v1/worklist/999/pause'), 400, E.invalidWorker);
      assert.deepEqual(await list(s), works, 'nothing paused, resumed or deleted');
    }));
});

describe('GET /worklist/search/', () => {
  const setup = async (s: TestServer) => {
    await queue(s, { id: '1,2', ...external(IG1, IG2) });
    return list(s);
  };
  const cases: { query: string; total: number; filtered: number; pick: (all: Work[]) => Work[] }[] = [
    { query: '', total: 4, filtered: 4, pick: (all) => all },
    { query: '?limit=2', total: 4, filtered: 4, pick: (all) => all.slice(0, 2) },
    { query: '?limit=2&offset=1', total: 4, filtered: 4, pick: (all) => all.slice(1, 3) },
    { query: '?offset=3', total: 4, filtered: 4, pick: (all) => all.slice(3) },
    { query: '?offset=10', total: 4, filtered: 4, pick: () => [] },
    { query: '?limit=0', total: 4, filtered: 4, pick: () => [] },
    { query: `?plugin_code=${IG2}`, total: 4, filtered: 2, pick: (all) => all.filter((w) => w.plugin.code === IG2) },
    { query: `?plugin_code=${IG2}&limit=1&offset=1`, total: 4, filtered: 2, pick: (all) => all.filter((w) => w.plugin.code === IG2).slice(1, 2) },
    { query: '?plugin_type=external&plugin_group=web', total: 4, filtered: 4, pick: (all) => all },
    { query: '?plugin_type=active', total: 4, filtered: 0, pick: () => [] },
    { query: '?plugin_group=network', total: 4, filtered: 0, pick: () => [] },
    { query: `?target_url=${encodeURIComponent(B)}`, total: 4, filtered: 2, pick: (all) => all.filter((w) => w.target.id === 2) },
    // substrings, in any case, as upstream's SQL LIKE '%v%'; upstream's argument names too
    { query: '?target_url=B.EXAMPLE', total: 4, filtered: 2, pick: (all) => all.filter((w) => w.target.id === 2) },
    { query: '?target_url=.example', total: 4, filtered: 4, pick: (all) => all },
    { query: '?target_url=http%3A%2F%2Fa', total: 4, filtered: 2, pick: (all) => all.filter((w) => w.target.id === 1) },
    { query: '?plugin_code=ig-00', total: 4, filtered: 4, pick: (all) => all },
    { query: '?plugin_code=IG-002', total: 4, filtered: 2, pick: (all) => all.filter((w) => w.plugin.code === IG2) },
    { query: '?type=EXTERN&group=we', total: 4, filtered: 4, pick: (all) => all },
    { query: '?type=semi', total: 4, filtered: 0, pick: () => [] },
    { query: '?group=net', total: 4, filtered: 0, pick: () => [] },
    { query: '?name=search_engine', total: 4, filtered: 2, pick: (all) => all.filter((w) => w.plugin.code === IG2) },
    { query: '?id=2', total: 4, filtered: 2, pick: (all) => all.filter((w) => w.target.id === 2) },
    { query: '?target_url=c.example', total: 4, filtered: 0, pick: () => [] },
    { query: '?target_url=%25', total: 4, filtered: 0, pick: () => [] },
  ];
  for (const { query, total, filtered, pick } of cases) {
    test(`GET /worklist/search/${query} answers records_total ${total}, records_filtered ${filtered} and the page`, () =>
      withServer(async (s) => {
        const all = await setup(s);
        assert.deepEqual(await get(s, `/api/v1/worklist/search/${query}`), { records_total: total, records_filtered: filtered, data: pick(all) });
      }));
  }

  test('every work on http://127.0.0.1:<port>/ is found by target_url=127.0.0.1 (the issue\'s case)', () =>
    withServer(async (s) => {
      const [local] = await addTargets(s, `http://127.0.0.1:${s.port}/`);
      await queue(s, { id: String(local), ...external(IG1, IG2) });
      const found = await get(s, '/api/v1/worklist/search/?target_url=127.0.0.1');
      assert.equal(found.records_filtered, 2);
      assert.deepEqual(found.data.map((w: Work) => w.target.id), [local, local]);
    }));

  for (const query of ['?limit=abc', '?offset=-1', '?limit=1.5', '?id=x']) {
    test(`GET /worklist/search/${query} is 400 Invalid parameter type provided`, () =>
      withServer(async (s) => {
        assertFail(await send(s, 'GET', `/api/v1/worklist/search/${query}`), 400, M.invalidParameterType);
      }));
  }
});

describe('PATCH /worklist/<id>/pause|resume', () => {
  test('pause makes one work inactive, resume active again', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1) });
      const [first, second] = await list(s);
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/worklist/${first!.id}/pause`), {});
      assert.deepEqual((await list(s)).map((w) => w.active), [false, true]);
      assert.equal((await get(s, `/api/v1/worklist/${first!.id}`)).active, false);
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/worklist/${first!.id}/resume/`), {});
      assert.deepEqual((await list(s)).map((w) => w.active), [true, true]);
      void second;
    }));

  test('pause and resume of 0 act on every work', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1, IG2) });
      await ok(s, 'PATCH', '/api/v1/worklist/0/pause');
      assert.deepEqual((await list(s)).map((w) => w.active), [false, false, false, false]);
      await ok(s, 'PATCH', '/api/v1/worklist/0/resume');
      assert.deepEqual((await list(s)).map((w) => w.active), [true, true, true, true]);
    }));

  test('a paused work is passed over; resumed, it runs', () =>
    withServer(async (s) => {
      await queue(s, { id: '1', ...external(IG1, IG2) });
      const [first] = await list(s);
      await ok(s, 'PATCH', `/api/v1/worklist/${first!.id}/pause`);
      await ok(s, 'POST', '/api/v1/workers/');
      await waitForOutput(s, 1, `external@${IG2}`, ['Successful']);
      assert.deepEqual(pairs(await list(s)), [`1 ${first!.plugin.key}`]);
      assert.equal((await get(s, '/api/v1/targets/1/poutput/')).length, 1);
      await ok(s, 'PATCH', `/api/v1/worklist/${first!.id}/resume`);
      await waitForOutput(s, 1, first!.plugin.key, ['Successful']);
      await waitFor('the worklist to empty', async () => (await list(s)).length === 0);
    }));

  const rows: { name: string; method: string; path: string; status: number; message?: string; then?: boolean[] }[] = [
    { name: 'PATCH without an id', method: 'PATCH', path: '/api/v1/worklist/', status: 400, message: E.workIdNone },
    // upstream's route: the id is optional before the action
    { name: 'PATCH of an action without an id', method: 'PATCH', path: '/api/v1/worklist/pause', status: 400, message: E.workIdNone },
    { name: 'DELETE of an action without an id', method: 'DELETE', path: '/api/v1/worklist/pause/', status: 400, message: E.workIdNone },
    { name: 'PATCH without an action', method: 'PATCH', path: '/api/v1/worklist/1', status: 400, message: E.actionNone },
    { name: 'PATCH pause of an unknown work', method: 'PATCH', path: '/api/v1/worklist/999/pause', status: 400, message: E.invalidWorker },
    { name: 'PATCH resume of an unknown work', method: 'PATCH', path: '/api/v1/worklist/999/resume', status: 400, message: E.invalidWorker },
    { name: 'PATCH with another action', method: 'PATCH', path: '/api/v1/worklist/1/frobnicate', status: 200, then: [true, true] },
    { name: 'PATCH with another action on every work', method: 'PATCH', path: '/api/v1/worklist/0/delete', status: 200, then: [true, true] },
    { name: 'DELETE without an id', method: 'DELETE', path: '/api/v1/worklist/', status: 400, message: E.workIdNone },
    { name: 'DELETE with an action', method: 'DELETE', path: '/api/v1/worklist/1/pause', status: 400, message: E.actionNone },
    { name: 'DELETE of an unknown work', method: 'DELETE', path: '/api/v1/worklist/999', status: 400, message: E.invalidWorker },
  ];
  for (const row of rows) {
    test(`${row.name} is ${row.status}${row.message ? ` ${row.message}` : ', nothing changes'}`, () =>
      withServer(async (s) => {
        await queue(s, { id: '1,2', ...external(IG1) });
        const before = await list(s);
        const res = await send(s, row.method, row.path);
        if (row.message) assertFail(res, row.status, row.message);
        else assert.deepEqual(assertSuccessData(res, row.status), {});
        assert.deepEqual(await list(s), before);
        if (row.then) assert.deepEqual(before.map((w) => w.active), row.then);
      }));
  }
});

function assertSuccessData(res: { status: number; text: string; json: any }, status: number): unknown {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json.status, 'success');
  return res.json.data;
}

describe('DELETE /worklist/<id>', () => {
  test('DELETE removes one work; the pair can then be queued again', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1) });
      const [first, second] = await list(s);
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/worklist/${first!.id}`), {});
      assert.deepEqual(await list(s), [second]);
      assertFail(await send(s, 'GET', `/api/v1/worklist/${first!.id}`), 400, E.invalidWorker);
      assertFail(await send(s, 'DELETE', `/api/v1/worklist/${first!.id}`), 400, E.invalidWorker);
      assert.equal(await queue(s, { id: '1', ...external(IG1) }), 1);
    }));

  test('DELETE of 0 removes every queued work', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1, IG2) });
      await ok(s, 'PATCH', `/api/v1/worklist/${(await list(s))[0]!.id}/pause`);
      assert.deepEqual(await ok(s, 'DELETE', '/api/v1/worklist/0/'), {});
      assert.deepEqual(await list(s), []);
      assert.deepEqual(await get(s, '/api/v1/worklist/search/'), { records_total: 0, records_filtered: 0, data: [] });
      assert.equal(await queue(s, { id: '1,2', ...external(IG1, IG2) }), 4);
    }));

  test('deleting a target removes its queued works', () =>
    withServer(async (s) => {
      await queue(s, { id: '1,2', ...external(IG1) });
      await ok(s, 'DELETE', '/api/v1/targets/1');
      assert.deepEqual(pairs(await list(s)), ['2 external@OWTF-IG-001']);
    }));
});
