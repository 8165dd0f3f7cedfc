import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setMaxListeners } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CHECKS, CHECK_CODES, highestRank } from '../../src/engine/checks/index.ts';
import { probeOrigins } from '../../src/engine/checks/cors.ts';
import { getDecodeSplit } from '../../src/engine/checks/framing.ts';
import type { CheckResult, Finding } from '../../src/engine/types.ts';
import { hardened, headersFromQuery, inputFor, lenient, misconfigured, refusedUrl, serveHttp, serveSilence, type Target } from './fixtures/targets.ts';

/** The check's findings, after asserting it ran to its end. */
function findingsOf(result: CheckResult): Finding[] {
  assert.equal(result.status, 'Successful', JSON.stringify(result));
  return result.status === 'Successful' ? result.findings : [];
}

function details(findings: Finding[]): string {
  return findings.map((f) => `${f.title}\n${f.detail}`).join('\n');
}

type Expectation = { rank: number; evidence: Array<string | RegExp> } | 'Skipped';

const RULES: Record<string, Record<string, Expectation>> = {
  misconfigured: {
    robots: { rank: 1, evidence: ['Disallow: /admin/', 'Disallow: /backup.zip', 'Allow: /public/', '3 paths'] },
    banners: { rank: 1, evidence: ['Server: Apache/2.4.41 (Ubuntu)', 'X-Powered-By: PHP/7.4.3', '<meta content="WordPress 5.8.1" name="generator">'] },
    tls: 'Skipped',
    'http-methods': { rank: 3, evidence: ['TRACE echoes the request', /X-Assessd-Trace: [0-9a-f]{24}/, 'Allow: GET, HEAD, POST, PUT, DELETE, OPTIONS, TRACE', 'Write method handled: PUT and DELETE', /PUT http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{16}\/[0-9a-f]{16}\/: 201/] },
    cookies: { rank: 2, evidence: ['Cookie PHPSESSID lacks HttpOnly, SameSite', 'Set-Cookie: PHPSESSID=abc123; path=/', 'Cookie theme lacks SameSite'] },
    framing: { rank: 2, evidence: ['No X-Frame-Options header'] },
    cors: { rank: 4, evidence: [/Origin: https:\/\/[0-9a-f]{12}\.example\nAccess-Control-Allow-Origin: https:\/\/[0-9a-f]{12}\.example/, 'Access-Control-Allow-Credentials: true', 'Origin: null\nAccess-Control-Allow-Origin: null', 'a credentialed read succeeds', 'Another name starting with the host (what an allow list anchored at its start only accepts) may read', /Origin: http:\/\/127\.0\.0\.1\.attacker\.test:\d+\n/] },
  },
  hardened: {
    robots: { rank: 0, evidence: [] },
    banners: { rank: 0, evidence: ['Server: nginx', 'no version'] },
    tls: 'Skipped',
    'http-methods': { rank: 0, evidence: ['Allow: GET, HEAD', 'Write probes refused: PUT: 405, DELETE: 405'] },
    cookies: { rank: 0, evidence: ['Set-Cookie: sid=xyz; Path=/; HttpOnly; Secure; SameSite=Lax'] },
    framing: { rank: 0, evidence: ['X-Frame-Options: DENY'] },
    cors: { rank: 0, evidence: [] },
  },
  lenient: {
    robots: { rank: 0, evidence: [] },
    banners: { rank: 1, evidence: ['Server: nginx/1.18.0'] },
    tls: 'Skipped',
    'http-methods': { rank: 1, evidence: ['PUT advertised, but refused', 'Allow: GET, HEAD, PUT', 'The probes were refused (PUT: 405, DELETE: 405)'] },
    cookies: { rank: 0, evidence: [] },
    framing: { rank: 0, evidence: ["Content-Security-Policy: default-src 'self'; frame-ancestors 'self'"] },
    cors: { rank: 1, evidence: ['Access-Control-Allow-Origin: *', 'Any origin may read the page, without credentials (*)'] },
  },
};

const HANDLERS = { misconfigured, hardened, lenient };

for (const [name, rules] of Object.entries(RULES)) {
  describe(`the checks against a ${name} target`, () => {
    let target: Target;
    const results = new Map<string, CheckResult>();
    before(async () => {
      target = await serveHttp(HANDLERS[name as keyof typeof HANDLERS]);
      const started = performance.now();
      // All seven at once, as workers would run them.
      await Promise.all(Object.entries(CHECKS).map(async ([check, run]) => results.set(check, await run(inputFor(target.url)))));
      const took = performance.now() - started;
      assert.ok(took < 5000, `the seven checks took ${took} ms`);
    });
    after(() => target.close());

    for (const [check, expected] of Object.entries(rules)) {
      const title =
        expected === 'Skipped'
          ? `${check} (${CHECK_CODES[check]}) is Skipped on an http target`
          : `${check} (${CHECK_CODES[check]}) ranks ${expected.rank}, quoting the evidence`;
      test(title, () => {
        const result = results.get(check)!;
        if (expected === 'Skipped') {
          assert.equal(result.status, 'Skipped');
          assert.match(result.status === 'Skipped' ? result.reason : '', /not https/);
          return;
        }
        const findings = findingsOf(result);
        assert.equal(highestRank(findings), expected.rank, details(findings));
        for (const evidence of expected.evidence) {
          if (typeof evidence === 'string') assert.ok(details(findings).includes(evidence), `${evidence} not in:\n${details(findings)}`);
          else assert.match(details(findings), evidence);
        }
        for (const finding of findings) assert.ok(finding.title.length > 0 && finding.detail.length > 0);
        assert.ok(result.status === 'Successful' && result.summary.includes(target.url.slice(0, -1)), 'the summary says what was requested');
      });
    }
  });
}

describe('a target whose every answer is a redirect not followed', () => {
  // an http site sending everything to its https origin (another target), and one that loops
  const away = (_req: IncomingMessage, res: ServerResponse) => res.writeHead(301, { location: 'https://localhost:1/' }).end();
  const loop = (_req: IncomingMessage, res: ServerResponse) => res.writeHead(302, { location: '/' }).end();
  // the redirect's own headers are still judged: a cookie and a banner it carries
  const telling = (_req: IncomingMessage, res: ServerResponse) =>
    res.writeHead(301, { location: 'https://localhost:1/', server: 'Apache/2.4.41', 'set-cookie': 'sid=1; path=/' }).end();
  const cases: Array<[string, (req: IncomingMessage, res: ServerResponse) => void, string]> = [
    ['to another origin', away, 'another origin than http://127.0.0.1:'],
    ['in a loop', loop, 'more than 5 redirects'],
  ];
  for (const [name, handler, reason] of cases) {
    test(`${name}: framing, robots, cookies and banners are unranked (nothing was seen, so nothing passed), not Passing`, async () => {
      const target = await serveHttp(handler);
      try {
        for (const check of ['framing', 'robots', 'cookies', 'banners'] as const) {
          const findings = findingsOf(await CHECKS[check]!(inputFor(target.url)));
          assert.equal(highestRank(findings), -1, `${check}: ${details(findings)}`);
          assert.ok(details(findings).includes('Redirect not followed: the page was not seen'), details(findings));
          assert.ok(details(findings).includes(reason), details(findings));
        }
      } finally {
        await target.close();
      }
    });
  }
  test('the headers the redirect carries are still ranked beside it; a redirect to another origin says to add it as a target', async () => {
    const target = await serveHttp(telling);
    try {
      const cookies = findingsOf(await CHECKS.cookies!(inputFor(target.url)));
      assert.equal(highestRank(cookies), 2, details(cookies));
      assert.ok(details(cookies).includes('add it as a target to check it'), details(cookies));
      const banners = findingsOf(await CHECKS.banners!(inputFor(target.url)));
      assert.equal(highestRank(banners), 1, details(banners));
      assert.ok(banners.some((f) => f.rank === -1), details(banners));
    } finally {
      await target.close();
    }
  });
});

describe('header variants', () => {
  let target: Target;
  before(async () => (target = await serveHttp(headersFromQuery)));
  after(() => target.close());

  const VARIANTS: Array<[check: string, headers: string[], rank: number, evidence: string]> = [
    ['framing', ['X-Frame-Options:ALLOW-FROM https://a.example'], 2, 'X-Frame-Options: ALLOW-FROM https://a.example'],
    ['framing', ['X-Frame-Options:sameorigin'], 0, 'X-Frame-Options: sameorigin'],
    ['framing', ['Content-Security-Policy:frame-ancestors *'], 2, 'Content-Security-Policy: frame-ancestors *'],
    ['framing', ['Content-Security-Policy:frame-ancestors https://a.example'], 1, 'frame-ancestors https://a.example'],
    // CSP's grammar: what is not a source is ignored (as Chromium does); what is left decides
    ['framing', ['Content-Security-Policy:frame-ancestors <img src=x onerror=alert(1)>'], 0, 'allows no site'],
    ['framing', ['Content-Security-Policy:frame-ancestors <img https:'], 2, 'invalid sources ignored, as browsers ignore them: "<img"'],
    ['framing', ['Content-Security-Policy:frame-ancestors https://*'], 2, 'allows any site'],
    ['framing', ["Content-Security-Policy:frame-ancestors 'self'"], 0, "allows only the page's own origin"],
    ['framing', ["Content-Security-Policy-Report-Only:frame-ancestors 'none'"], 2, 'No X-Frame-Options header and no Content-Security-Policy frame-ancestors'],
    // an enforced frame-ancestors overrides X-Frame-Options (CSP Level 3)
    ['framing', ['X-Frame-Options:DENY', 'Content-Security-Policy:frame-ancestors *'], 2, 'CSP frame-ancestors allows any site'],
    // X-Frame-Options as the HTML standard processes it: values split and compared as a set
    ['framing', ['X-Frame-Options:SAMEORIGIN, SAMEORIGIN'], 0, 'SAMEORIGIN'],
    ['framing', ['X-Frame-Options:DENY, SAMEORIGIN'], 0, 'conflicting values'],
    ['framing', ['X-Frame-Options:nonsense, other'], 2, 'only values browsers ignore'],
    // a quoted value is one value, quotes and all (Fetch's get, decode, and split)
    ['framing', ['X-Frame-Options:"DENY"'], 2, '""deny"" is not a value browsers act on'],
    ['framing', ['X-Frame-Options:"DENY, SAMEORIGIN", DENY'], 0, 'conflicting values'],
    ['framing', ['X-Frame-Options:DENY,'], 0, 'conflicting values deny, '],
    ['framing', ['X-Frame-Options:DENY', 'X-Frame-Options:DENY'], 0, 'X-Frame-Options (no CSP frame-ancestors): DENY'],
    ['cors', ['Access-Control-Allow-Origin:echo-origin'], 1, 'Any origin may read the page, without credentials (its Origin echoed)'],
    ['cors', ['Access-Control-Allow-Origin:*', 'Access-Control-Allow-Credentials:true'], 1, 'Access-Control-Allow-Origin: *'],
    ['cors', ['Access-Control-Allow-Origin:https://app.example', 'Access-Control-Allow-Credentials:true'], 0, 'Access-Control-Allow-Origin: https://app.example'],
    // two lines combine into "a, a": no browser reads it
    ['cors', ['Access-Control-Allow-Origin:echo-origin', 'Access-Control-Allow-Origin:echo-origin', 'Access-Control-Allow-Credentials:true'], 0, 'sent more than once: browsers refuse every cross-origin read'],
    ['cors', ['Access-Control-Allow-Origin:echo-origin', 'Access-Control-Allow-Credentials:true', 'Access-Control-Allow-Credentials:true'], 1, 'Any origin may read the page, without credentials (its Origin echoed)'],
    ['cors', ['Access-Control-Allow-Origin:echo-origin', 'Access-Control-Allow-Credentials:True'], 1, 'without credentials'],
    ['banners', ['X-AspNet-Version:4.0.30319'], 1, 'X-AspNet-Version: 4.0.30319'],
    ['banners', ['X-AspNetMvc-Version:5.2'], 1, 'X-AspNetMvc-Version: 5.2'],
    ['banners', ['Server:Microsoft-IIS/10.0'], 1, 'Server: Microsoft-IIS/10.0'],
    ['banners', ['X-Powered-By:Express'], 0, 'X-Powered-By: Express'],
    ['cookies', ['Set-Cookie:a=1; samesite=strict; httponly'], 0, 'Set-Cookie: a=1; samesite=strict; httponly'],
  ];
  for (const [check, headers, rank, evidence] of VARIANTS) {
    test(`${check} ranks ${rank} for ${headers.join(' + ')}`, async () => {
      const query = headers.map((h) => `h=${encodeURIComponent(h)}`).join('&');
      const findings = findingsOf(await CHECKS[check as keyof typeof CHECKS](inputFor(`${target.url}?${query}`)));
      assert.equal(highestRank(findings), rank, details(findings));
      assert.ok(details(findings).includes(evidence), details(findings));
    });
  }
});

test('a target sending 1,100 header lines before its X-Frame-Options: every line is read (node keeps 1,000 unless told), so framing is ranked on what was sent', async () => {
  const target = await serveHttp((_req, res) => {
    const headers: string[] = [];
    for (let i = 0; i < 1100; i++) headers.push(`X-F${i}`, '1');
    res.writeHead(200, [...headers, 'Content-Type', 'text/html', 'X-Frame-Options', 'DENY', 'Content-Security-Policy', "frame-ancestors 'none'"]);
    res.end('<html></html>');
  });
  try {
    const findings = findingsOf(await CHECKS.framing!(inputFor(target.url)));
    assert.equal(highestRank(findings), 0, details(findings));
    assert.ok(details(findings).includes('X-Frame-Options'), details(findings));
  } finally {
    target.close();
  }
});

test('header bytes that are UTF-8 are quoted in a finding as the text they spell (Débian), as the evidence stores them', async () => {
  // node writes a header string one byte per character: these are the UTF-8 bytes of é
  const server = Buffer.from('Apache/2.4.41 (Débian)').toString('latin1');
  const target = await serveHttp((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html', Server: server }).end('<p>x</p>'));
  try {
    const findings = findingsOf(await CHECKS.banners!(inputFor(target.url)));
    assert.ok(details(findings).includes('Server: Apache/2.4.41 (Débian)'), details(findings));
  } finally {
    target.close();
  }
});

test('an answer whose headers are past what a check reads (300 KB) is said to be that, not "not valid HTTP"', async () => {
  const target = await serveHttp((_req, res) => res.writeHead(200, { 'Content-Security-Policy': 'a'.repeat(300_000) }).end('x'));
  try {
    const findings = findingsOf(await CHECKS.framing!(inputFor(target.url)));
    assert.equal(highestRank(findings), -1);
    assert.match(findings[0]!.detail, /headers larger than the 256 KiB a check reads/, details(findings));
  } finally {
    target.close();
  }
});

test('a banner said many times is one finding saying how often: 1,000 generator tags and two Server lines', async () => {
  const target = await serveHttp((_req, res) => {
    res.setHeader('server', ['nginx/1.22.1', 'nginx/1.22.1']);
    res.end(`<html><head>${'<meta name="generator" content="WordPress 6.4">'.repeat(1000)}<meta name="generator" content="Hugo"></head></html>`);
  });
  try {
    const findings = findingsOf(await CHECKS.banners!(inputFor(target.url)));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[1, 'Server names a version'], [1, 'generator meta names a version'], [0, 'generator meta names software, no version']]);
    assert.match(findings[0]!.detail, /^server: nginx\/1\.22\.1 \(said 2 times\)$/m);
    assert.match(findings[1]!.detail, /content="WordPress 6\.4"> \(said 1,000 times\)$/m);
  } finally {
    await target.close();
  }
});

test('an answer of more header lines than a check reads (5,000) is said to be that, unranked; 4,990 and an X-Frame-Options after them are read', async () => {
  // small lines: 60,000 of them fit the 256 KiB, and reading each cost the event loop half a second
  const target = await serveHttp((req, res) => {
    res.setHeader('x-a', Array(req.url === '/many' ? 6000 : 4990).fill('b'));
    res.setHeader('x-frame-options', 'DENY');
    res.end('x');
  });
  try {
    const many = findingsOf(await CHECKS.framing!(inputFor(`${target.url}many`)));
    assert.equal(highestRank(many), -1, details(many));
    assert.equal(many[0]!.title, 'Target answered, but not valid HTTP');
    assert.match(many[0]!.detail, /more header lines than the 5,000 a check reads/, details(many));
    const read = findingsOf(await CHECKS.framing!(inputFor(`${target.url}fewer`)));
    assert.equal(highestRank(read), 0, details(read));
    assert.match(details(read), /^x-frame-options: DENY$/m);
  } finally {
    await target.close();
  }
});

test('a body that is not UTF-8 is said as the bytes that came (not as its text, where each bad byte is three)', async () => {
  const body = Buffer.from([0x3c, 0x70, 0x3e, 0x00, 0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]);
  const target = await serveHttp((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(body));
  try {
    const result = await CHECKS.banners!(inputFor(target.url));
    assert.equal(result.status, 'Successful');
    assert.match(result.status === 'Successful' ? result.summary : '', new RegExp(`: 200, ${body.length} bytes`));
  } finally {
    target.close();
  }
});

describe('a target that does not answer', () => {
  test('a refused connection: every check ends Successful with one unranked "Target did not answer" (never Passing)', async () => {
    const url = await refusedUrl();
    for (const [check, run] of Object.entries(CHECKS)) {
      if (check === 'tls') continue;
      const findings = findingsOf(await run(inputFor(url, 1000)));
      assert.equal(findings.length, 1, check);
      assert.equal(findings[0]!.rank, -1);
      assert.equal(highestRank(findings), -1);
      assert.equal(findings[0]!.title, 'Target did not answer');
      assert.match(findings[0]!.detail, /ECONNREFUSED.*time limit 1000 ms/);
    }
  });

  test('a server that accepts and never answers: the time-limit finding, within the limit', async () => {
    const silent = await serveSilence();
    try {
      const started = performance.now();
      const results = await Promise.all(
        Object.entries(CHECKS).filter(([check]) => check !== 'tls').map(([, run]) => run(inputFor(silent.url, 1000))),
      );
      const took = performance.now() - started;
      // the limit once, not once a probe (six probes: 6 s); loose, for a busy box
      assert.ok(took < 3000, `took ${took} ms for a 1000 ms limit`);
      for (const result of results) {
        const [finding] = findingsOf(result);
        assert.equal(finding!.title, 'Target did not answer');
        assert.match(finding!.detail, /no complete answer within 1000 ms \(time limit 1000 ms\)/);
      }
    } finally {
      await silent.close();
    }
  });

  test('http-methods: a TRACE whose connection is reset still reports what OPTIONS said', async () => {
    const target = await serveHttp((req, res) => {
      if (req.method === 'TRACE') return void req.socket.destroy();
      res.writeHead(req.method === 'OPTIONS' ? 200 : 405, { Allow: 'GET, DELETE' }).end();
    });
    try {
      const result = await CHECKS['http-methods']!(inputFor(target.url));
      assert.deepEqual(findingsOf(result).map((f) => [f.rank, f.title]), [[1, 'DELETE advertised, but refused']]);
      assert.match(findingsOf(result)[0]!.detail, /^Allow: GET, DELETE\nThe probes were refused \(PUT: 405, DELETE: 405\)\nRule: /);
      assert.match(result.status === 'Successful' ? result.summary : '', /^TRACE http:\/\/127\.0\.0\.1:\d+\/: no answer \(TRACE .*socket hang up\)$/m);
    } finally {
      await target.close();
    }
  });

  test('an abort ends every check promptly with an AbortError', async () => {
    const silent = await serveSilence();
    try {
      const controller = new AbortController();
      setMaxListeners(50, controller.signal);
      const started = performance.now();
      const runs = Object.values(CHECKS).map((run) =>
        run(inputFor(silent.url.replace('http:', 'https:'), 10_000, controller.signal)),
      );
      setTimeout(() => controller.abort(), 50);
      await Promise.all(runs.map((run) => assert.rejects(run, { name: 'AbortError' })));
      // far under the 10 s time limits they would otherwise wait for; loose, for a busy box
      assert.ok(performance.now() - started < 5000);
      // Already aborted: rejects without a request.
      await assert.rejects(CHECKS.robots!(inputFor(silent.url, 10_000, controller.signal)), { name: 'AbortError' });
    } finally {
      await silent.close();
    }
  });
});

test('CHECKS names the seven checks', () => {
  assert.deepEqual(Object.keys(CHECKS).sort(), ['banners', 'cookies', 'cors', 'framing', 'http-methods', 'robots', 'tls']);
  assert.deepEqual(Object.keys(CHECK_CODES).sort(), Object.keys(CHECKS).sort());
});

describe('the probe origins of the cors check', () => {
  test('for https://app.example: foreign, null, suffix, prefix, subdomain and the http origin', () => {
    assert.deepEqual(probeOrigins('https://app.example/shop/', 'f00d').map((p) => [p.kind, p.origin, p.attacker]), [
      ['foreign', 'https://f00d.example', true],
      ['null', 'null', true],
      ['suffix', 'https://attackerapp.example', true],
      ['prefix', 'https://app.example.attacker.test', true],
      ['subdomain', 'https://x.app.example', false],
      ['http', 'http://app.example', false],
    ]);
  });

  test('the target\'s scheme and port kept; no http origin for an http target; no suffix or subdomain of an IP address', () => {
    assert.deepEqual(probeOrigins('http://localhost:8080/', 'f00d').map((p) => p.origin), [
      'https://f00d.example', 'null', 'http://attackerlocalhost:8080', 'http://localhost.attacker.test:8080', 'http://x.localhost:8080',
    ]);
    assert.deepEqual(probeOrigins('https://127.0.0.1:8443/', 'f00d').map((p) => p.kind), ['foreign', 'null', 'prefix', 'http']);
    assert.deepEqual(probeOrigins('http://[::1]:80/', 'f00d').map((p) => p.kind), ['foreign', 'null']);
  });
});

describe('X-Frame-Options values as Fetch\'s "get, decode, and split" gives them', () => {
  const CASES: Array<[header: string, values: string[]]> = [
    ['DENY', ['DENY']],
    ['SAMEORIGIN, SAMEORIGIN', ['SAMEORIGIN', 'SAMEORIGIN']],
    [' deny ,\tsameorigin\t', ['deny', 'sameorigin']],
    ['DENY,', ['DENY', '']],
    ['', ['']],
    ['"DENY, SAMEORIGIN", DENY', ['"DENY, SAMEORIGIN"', 'DENY']],
    ['"a\\"b", c', ['"a\\"b"', 'c']],
    ['"unterminated, x', ['"unterminated, x']],
    ['a"b,c"d, e', ['a"b,c"d', 'e']],
  ];
  for (const [header, values] of CASES) {
    test(JSON.stringify(header), () => assert.deepEqual(getDecodeSplit(header), values));
  }
});
