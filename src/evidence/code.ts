/**
 * Copy as code (upstream's hrt): a transaction's request as bash (curl), Python, PHP, Ruby,
 * JavaScript fetch, or raw HTTP/1.1. Run as it is, the code sends the recorded method, URL,
 * headers and body bytes, and nothing else runs: every value goes through its language's one
 * quoting function (a literal with escapes, never interpolated), and a body that is not UTF-8
 * text, or is over a MiB, travels as base64 decoded by the program.
 */
import { isUtf8 } from 'node:buffer';
import { hexEscaped, plainBytes } from './hex-escape.js';
import { TOKEN, type Header } from './record.js';
import { bareHost, pathAsWritten } from './scope.js';

export const LANGUAGES = ['bash', 'python', 'php', 'ruby', 'fetch', 'raw'] as const;
export type Language = (typeof LANGUAGES)[number];

/** What the code sends: the recorded request (or its body replaced). */
export interface CodeRequest {
  method: string;
  url: string;
  headers: Header[];
  body: Buffer;
}

export interface CodeOptions {
  /** A proxy to send the request through (`http://host:port`). */
  proxy?: string;
  /** Lines of the response holding this (any case) are shown. */
  searchString?: string;
  /**
   * The target's certificate was not trusted when the request was recorded (a lab's self-signed
   * one, through the proxy): the code does not check it either, and says so; as a replay does.
   * Only an https request has one: requestAsCode clears it for any other.
   */
  untrustedCertificate?: boolean;
}

/** The comment put before code that does not check the certificate. */
const UNCHECKED = "the target's certificate was not trusted when this request was recorded (a lab's own?): it is not checked";

/** Headers no client sends as given: HTTP/2 pseudo-headers, and the framing each client works out from the body. */
const FRAMING = new Set(['content-length', 'transfer-encoding']);
/** Headers fetch refuses or drops (the Fetch standard's, as Node's fetch applies them). */
const FETCH_DROPS = new Set(['host', 'connection', 'keep-alive', 'upgrade', 'expect', 'proxy-connection']);

const has = (headers: Header[], name: string) => headers.some(([n]) => n.toLowerCase() === name);

/**
 * The longest body written as text in the code; past it, base64. A body of MiBs is not read in the
 * code, and written as text each byte past ASCII took four (`\xC3\xA9`): 16 MiB of `é` made 67 MB
 * of code, the server held 0.5 s a language.
 */
const TEXT_BODY_BYTES = 1024 * 1024;
/** The most single quotes a body written as text for the shell may hold: bash reads each `'\''` slower the more there are (80,000: 0.17 s; 800,000: 45 s). */
const SHELL_QUOTES = 4096;

/** Whether the body can be written as text in the code (else base64). */
const isText = (body: Buffer) => body.length <= TEXT_BODY_BYTES && isUtf8(body) && !body.includes(0);

/** Whether the body can be written as text for the shell: as for any language, with few single quotes. */
function isShellText(body: Buffer): boolean {
  if (!isText(body)) return false;
  let quotes = 0;
  for (let at = body.indexOf(0x27); at !== -1 && quotes <= SHELL_QUOTES; at = body.indexOf(0x27, at + 1)) quotes++;
  return quotes <= SHELL_QUOTES;
}

/**
 * What is sent: the recorded headers but pseudo-headers and framing, and a recorded
 * Proxy-Authorization when the proxy given has credentials of its own (they are sent instead).
 */
function sendable(request: CodeRequest, options: CodeOptions = {}): Header[] {
  const ownCredentials = options.proxy !== undefined && proxyCredentials(options.proxy) !== undefined;
  return request.headers.filter(([name]) => !name.startsWith(':') && !FRAMING.has(name.toLowerCase()) && !(ownCredentials && name.toLowerCase() === 'proxy-authorization'));
}

/** Whether the request carries a body (or said it did, with Content-Length: 0). */
const hasBody = (request: CodeRequest) => request.body.length > 0 || has(request.headers, 'content-length');

/** The parts of the URL a client connects with: scheme, host (IPv6 in brackets), port, origin-form target. */
function target(url: string): { https: boolean; host: string; hostname: string; port: number; path: string; absolute: string } {
  const u = new URL(url);
  const https = u.protocol === 'https:';
  const port = u.port === '' ? (https ? 443 : 80) : Number(u.port);
  const hostname = bareHost(u);
  // the path as recorded: `..` and `\` kept, as the request that was sent had them
  const path = pathAsWritten(url);
  return { https, host: u.host, hostname, port, path, absolute: `${u.origin}${path}` };
}

/**
 * The proxy's host and port, as the text names them: an explicit port even when it is its
 * scheme's default (`http://proxy:80`, which a URL writes without it), else 8080.
 */
function proxyAddress(proxy: string): ProxyAddress {
  const url = new URL(proxy);
  // the authority as written, without its user info (which may hold digits after a colon)
  const authority = /^\s*[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(proxy)?.[1] ?? '';
  const written = /^(?:\[[^\]]*\]|[^:]*):(\d+)$/.exec(authority.slice(authority.lastIndexOf('@') + 1));
  const port = url.port !== '' ? Number(url.port) : written ? Number(written[1]) : 8080;
  const credentials = proxyCredentials(proxy);
  return {
    host: bareHost(url),
    port,
    // as curl takes it: the port always named (curl's own default is 1080), the user info as written
    url: `http://${url.username === '' && url.password === '' ? '' : `${url.username}${url.password === '' ? '' : `:${url.password}`}@`}${url.hostname}:${port}`,
    ...(credentials ? { credentials, authorization: `Basic ${Buffer.concat([credentials.user, Buffer.from(':'), credentials.password]).toString('base64')}` } : {}),
  };
}

/**
 * The user and password of a proxy URL (`http://user:password@host`), as bytes, each `%HH` the
 * byte it stands for, as curl reads them (the rest as written); undefined when there are none.
 */
export function proxyCredentials(proxy: string): { user: Buffer; password: Buffer } | undefined {
  const url = new URL(proxy);
  if (url.username === '' && url.password === '') return undefined;
  return { user: percentBytes(url.username), password: percentBytes(url.password) };
}

/** A proxy as the code connects to it. */
interface ProxyAddress {
  host: string;
  port: number;
  /** `http://[user:password@]host:port`, for curl. */
  url: string;
  /** The user info (`http://user:password@...`): sent as Basic credentials, to the proxy only. */
  credentials?: { user: Buffer; password: Buffer };
  /** `Basic ...`: the Proxy-Authorization header of those credentials. */
  authorization?: string;
}

/** A URL's user or password as bytes: each valid `%HH` the byte (`%40` is `@`, `%FF` a byte that is no UTF-8), the rest as written. */
function percentBytes(text: string): Buffer {
  const bytes = Buffer.from(text);
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const hex = bytes[i] === 0x25 && i + 2 < bytes.length ? String.fromCharCode(bytes[i + 1], bytes[i + 2]) : '';
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      out.push(parseInt(hex, 16));
      i += 2;
    } else out.push(bytes[i]);
  }
  return Buffer.from(out);
}

// ---- quoting, one function per language ----

/** Shell: single quotes, each `'` as `'\''` (shlex.quote's way): nothing in it is expanded. */
export const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** A literal of bytes with `\xHH` escapes for every byte but plain printable ASCII, and for `escaped`. */
const escapedBytes = (bytes: Buffer, escaped: string) => hexEscaped(bytes, plainBytes(0x20, 0x7e, escaped), '\\x');

/** Python: a bytes literal `b'...'`. */
export const pythonBytes = (bytes: Buffer | string) => `b'${escapedBytes(Buffer.from(bytes), "\\'")}'`;
/** Python: a str literal of ASCII text. */
const pythonStr = (text: string) => `'${escapedBytes(Buffer.from(text, 'latin1'), "\\'")}'`;
/** Ruby: a double-quoted string (`#` escaped too: no interpolation) of these bytes, as binary. */
export const rubyBytes = (bytes: Buffer | string) => `"${escapedBytes(Buffer.from(bytes), '\\"#')}".b`;
/** PHP: a double-quoted string (`$` escaped too: no interpolation). */
export const phpBytes = (bytes: Buffer | string) => `"${escapedBytes(Buffer.from(bytes), '\\"$')}"`;
/** JavaScript: a string literal. */
export const jsString = (text: string) => JSON.stringify(text);
/** JavaScript: a header value as fetch sends it byte for byte (a ByteString holds one byte per character). */
const jsByteString = (text: string) => JSON.stringify(Buffer.from(text).toString('latin1'));

// ---- the languages ----

/**
 * Linux refuses a program an argument over 128 KiB, or arguments over 2 MiB in all ("Argument list
 * too long"), and a HAR may hold more: past this many bytes of header lines, curl reads them from a
 * builtin's output (`--header @<(printf ...)`, a header a line) instead.
 */
const CURL_ARGUMENT_BYTES = 64 * 1024;
/** The longest argument Linux passes to a program (MAX_ARG_STRLEN, its NUL included). */
const MAX_ARGUMENT_BYTES = 128 * 1024 - 1;

function bash(request: CodeRequest, options: CodeOptions): string {
  // an HTTP/2 capture's :authority as its Host, as the other languages send it (curl would send the URL's)
  const recorded = sendable(request, options);
  const authority = request.headers.find(([n]) => n.toLowerCase() === ':authority')?.[1];
  const headers: Header[] = authority !== undefined && !has(recorded, 'host') ? [['Host', authority], ...recorded] : recorded;
  // `Name;` sends an empty header; `Name:` (or `Name:   `: whitespace is no part of a value, RFC 9110 5.5) removes it.
  // Whitespace as curl counts it, not trim()'s: a no-break space is a value, sent as recorded
  const headerLines = headers.map(([name, value]) => (/^[\t\n\v\f\r ]*$/.test(value) ? `${name};` : `${name}: ${value}`));
  // a line of the file is a header: one holding a line break (a HAR import leaves none) stays an argument
  const inFile = headerLines.reduce((sum, line) => sum + Buffer.byteLength(line), 0) > CURL_ARGUMENT_BYTES && !headerLines.some((line) => /[\r\n]/.test(line));
  // one option (and its value) a line
  // a HEAD as --request HEAD waited for the body its Content-Length announced (until the server closed)
  const method = request.method === 'HEAD' && !hasBody(request) ? '--head' : `--request ${shellQuote(request.method)}`;
  const lines = ['curl -q --silent --show-error --globoff --path-as-is', method];
  if (inFile) lines.push(`--header @<(printf '%s\\n' ${headerLines.map(shellQuote).join(' ')})`);
  else for (const line of headerLines) lines.push(`--header ${shellQuote(line)}`);
  // curl's own defaults, where the recorded request had none
  for (const name of ['Accept', 'User-Agent', 'Expect']) if (!has(headers, name.toLowerCase())) lines.push(`--header ${shellQuote(`${name}:`)}`);
  if (hasBody(request) && !has(headers, 'content-type')) lines.push(`--header ${shellQuote('Content-Type:')}`);
  if (options.proxy) {
    lines.push(`--proxy ${shellQuote(proxyAddress(options.proxy).url)}`);
    // curl's own, in a request to an http proxy, where the recorded one had none
    if (!has(headers, 'proxy-connection')) lines.push(`--header ${shellQuote('Proxy-Connection:')}`);
  }
  if (options.untrustedCertificate) lines.push('--insecure');
  let input = '';
  if (hasBody(request)) {
    // through standard input: any size, any bytes (an argument can hold no NUL, and at most 128 KiB)
    lines.push('--data-binary @-');
    input = isShellText(request.body)
      ? `printf '%s' ${shellQuote(request.body.toString('utf8'))} | `
      : `printf '%s' ${shellQuote(request.body.toString('base64'))} | base64 --decode | `;
  }
  lines.push(`--url ${shellQuote(request.url)}`);
  const grep = options.searchString ? ` | grep --ignore-case --fixed-strings -e ${shellQuote(options.searchString)}` : '';
  // curl (7.88, Debian 12's) takes a URL as an argument, or in a config line of at most 100 KB
  const urlBytes = Buffer.byteLength(request.url);
  const tooLong = urlBytes > MAX_ARGUMENT_BYTES ? `# The URL is ${urlBytes} bytes: past the 128 KiB Linux passes a program as one argument, curl cannot be given it (the python code sends it)\n` : '';
  return `#!/usr/bin/env bash\n${options.untrustedCertificate ? `# ${UNCHECKED}\n` : ''}${tooLong}${input}${lines.join(' \\\n  ')}${grep}\n`;
}

/** The Host a request needs: the recorded one, else HTTP/2's :authority, else the URL's. */
function withHost(request: CodeRequest, headers: Header[]): Header[] {
  if (has(headers, 'host')) return headers;
  const authority = request.headers.find(([n]) => n.toLowerCase() === ':authority')?.[1];
  return [['Host', authority ?? target(request.url).host], ...headers];
}

function python(request: CodeRequest, options: CodeOptions): string {
  const t = target(request.url);
  // it sends no Host of its own (skip_host): the recorded one, or the URL's
  const headers = withHost(request, sendable(request, options));
  if (hasBody(request)) headers.push(['Content-Length', String(request.body.length)]);
  const body = isText(request.body) ? pythonBytes(request.body) : `base64.b64decode(${pythonStr(request.body.toString('base64'))})`;
  const proxy = options.proxy ? proxyAddress(options.proxy) : undefined;
  // the proxy's credentials: in the CONNECT for https, else in the request the proxy reads
  if (proxy?.authorization && !t.https) headers.push(['Proxy-Authorization', proxy.authorization]);
  const tunnelHeaders = proxy?.authorization ? `, headers={'Proxy-Authorization': ${pythonStr(proxy.authorization)}}` : '';
  const context = options.untrustedCertificate ? ', context=ssl._create_unverified_context()' : ', context=ssl.create_default_context()';
  const connect = (options.untrustedCertificate ? `# ${UNCHECKED}\n` : '') + (proxy
    ? `conn = http.client.${t.https ? 'HTTPSConnection' : 'HTTPConnection'}(${pythonStr(proxy.host)}, ${proxy.port}${t.https ? context : ''})\n` +
      (t.https ? `conn.set_tunnel(${pythonStr(t.hostname)}, ${t.port}${tunnelHeaders})\n` : '')
    : `conn = http.client.${t.https ? 'HTTPSConnection' : 'HTTPConnection'}(${pythonStr(t.hostname)}, ${t.port}${t.https ? context : ''})\n`);
  const path = proxy && !t.https ? t.absolute : t.path;
  const search = options.searchString
    ? `needle = ${pythonBytes(options.searchString)}.lower()\nfor line in data.splitlines(True):\n    if needle in line.lower():\n        sys.stdout.buffer.write(line)\n`
    : 'sys.stdout.buffer.write(data)\n';
  return (
    '#!/usr/bin/env python3\n' +
    'import base64, http.client, ssl, sys\n\n' +
    `method = ${pythonStr(request.method)}\n` +
    `path = ${pythonStr(path)}\n` +
    `headers = [\n${headers.map(([n, v]) => `    (${pythonBytes(n)}, ${pythonBytes(v)}),\n`).join('')}]\n` +
    `body = ${body}\n\n` +
    connect +
    '# headers exactly as listed: no Host nor Accept-Encoding of its own\n' +
    'conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)\n' +
    'for name, value in headers:\n    conn.putheader(name, value)\n' +
    `conn.endheaders(${hasBody(request) ? 'body' : ''})\n` +
    'response = conn.getresponse()\n' +
    'print(response.status, response.reason)\n' +
    'data = response.read()\n' +
    search
  );
}

/**
 * The request's head as it goes on the wire: the request line (origin-form; absolute-form to a
 * proxy, but for https, which a proxy tunnels), the recorded headers in their order and case,
 * Host from the URL when none was recorded, Content-Length worked out from the body.
 */
function wireHead(request: CodeRequest, absolute: boolean, options: CodeOptions): Buffer {
  const t = target(request.url);
  const headers = withHost(request, sendable(request, options));
  if (hasBody(request)) headers.push(['Content-Length', String(request.body.length)]);
  // a request the proxy reads (absolute-form) carries its credentials
  const authorization = options.proxy === undefined ? undefined : proxyAddress(options.proxy).authorization;
  if (absolute && authorization !== undefined) headers.push(['Proxy-Authorization', authorization]);
  return Buffer.from(`${request.method} ${absolute ? t.absolute : t.path} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`);
}

/**
 * PHP: the head and body written as they are on a socket (PHP's http wrapper adds a Connection
 * and a Content-Type of its own), the answer read as its framing says (the connection may stay
 * open), through the proxy's CONNECT for https.
 */
function php(request: CodeRequest, options: CodeOptions): string {
  const t = target(request.url);
  const proxy = options.proxy ? proxyAddress(options.proxy) : undefined;
  const head = wireHead(request, proxy !== undefined && !t.https, options);
  const body = request.body.length === 0 ? '""' : isText(request.body) ? phpBytes(request.body) : `base64_decode(${phpBytes(request.body.toString('base64'))})`;
  const authority = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const connect = proxy ? authority(proxy.host, proxy.port) : authority(t.hostname, t.port);
  const search = options.searchString
    ? `foreach (preg_split('/(?<=\\n)/', $response) as $line) {\n    if (stripos($line, ${phpBytes(options.searchString)}) !== false) echo $line;\n}\n`
    : 'echo $response;\n';
  const tunnel = proxy && t.https
    ? `fwrite($socket, ${phpBytes(`CONNECT ${authority(t.hostname, t.port)} HTTP/1.1\r\nHost: ${authority(t.hostname, t.port)}\r\n${proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : ''}\r\n`)});\n` +
      '$answer = rtrim((string) fgets($socket), "\\r\\n");\n' +
      "if ((int) substr($answer, 9, 3) !== 200) {\n    fwrite(STDERR, \"the proxy refused the tunnel: $answer\\n\");\n    exit(1);\n}\n" +
      "while (($line = fgets($socket)) !== false && rtrim($line, \"\\r\\n\") !== '') {\n}\n" +
      'stream_socket_enable_crypto($socket, true, STREAM_CRYPTO_METHOD_TLS_CLIENT);\n'
    : '';
  return (
    '<?php\n' +
    '// the request as recorded, written as it is\n' +
    `$method = ${phpBytes(request.method)};\n` +
    `$head = ${phpBytes(head)};\n` +
    `$body = ${body};\n` +
    (options.untrustedCertificate
      ? `// ${UNCHECKED}\n$context = stream_context_create(['ssl' => ['peer_name' => ${phpBytes(t.hostname)}, 'verify_peer' => false, 'verify_peer_name' => false]]);\n`
      : `$context = stream_context_create(['ssl' => ['peer_name' => ${phpBytes(t.hostname)}]]);\n`) +
    `$socket = stream_socket_client(${phpBytes(`${t.https && !proxy ? 'ssl' : 'tcp'}://${connect}`)}, $errno, $error, 30, STREAM_CLIENT_CONNECT, $context);\n` +
    'if ($socket === false) {\n    fwrite(STDERR, "$error\\n");\n    exit(1);\n}\n' +
    tunnel +
    'fwrite($socket, $head . $body);\n' +
    '// the answer: a status line and headers (past any 100 Continue), then the body as they frame it\n' +
    'do {\n' +
    '    $status = rtrim((string) fgets($socket), "\\r\\n");\n' +
    '    $code = (int) substr($status, 9, 3);\n' +
    '    $length = null;\n    $chunked = false;\n' +
    "    while (($line = fgets($socket)) !== false && ($line = rtrim($line, \"\\r\\n\")) !== '') {\n" +
    "        [$name, $value] = array_pad(explode(':', $line, 2), 2, '');\n" +
    "        if (strcasecmp(trim($name), 'content-length') === 0 && preg_match('/^[0-9]+$/', trim($value))) $length = (int) trim($value);\n" +
    "        if (strcasecmp(trim($name), 'transfer-encoding') === 0 && stripos($value, 'chunked') !== false) $chunked = true;\n" +
    '    }\n' +
    '} while ($code >= 100 && $code < 200 && $code !== 101);\n' +
    "$response = '';\n" +
    "if ($method === 'HEAD' || $code === 204 || $code === 304 || $code < 200) {\n" +
    '} elseif ($chunked) {\n' +
    "    while (($size = hexdec(trim(strtok((string) fgets($socket), ';')))) > 0) {\n" +
    '        $response .= stream_get_contents($socket, $size);\n        fgets($socket);\n    }\n' +
    '} elseif ($length !== null) {\n    $response = stream_get_contents($socket, $length);\n' +
    '} else {\n    $response = stream_get_contents($socket);\n}\n' +
    'fclose($socket);\n' +
    'echo $status, "\\n";\n' +
    search
  );
}

/**
 * Ruby: Net::HTTP for the connection (TLS, a proxy and its CONNECT) and the answer, but the head
 * written as recorded (Net::HTTP would capitalize the names, join repeated ones and add its own).
 */
function ruby(request: CodeRequest, options: CodeOptions): string {
  const t = target(request.url);
  const proxy = options.proxy ? proxyAddress(options.proxy) : undefined;
  const head = wireHead(request, proxy !== undefined && !t.https, options);
  const body = isText(request.body) ? rubyBytes(request.body) : `${rubyBytes(request.body.toString('base64'))}.unpack1('m0')`;
  // the credentials: Net::HTTP sends them in its CONNECT (an http request's head above has them)
  const credentials = proxy?.credentials ? `, ${rubyBytes(proxy.credentials.user)}, ${rubyBytes(proxy.credentials.password)}` : '';
  const connect = proxy
    ? `http = Net::HTTP.new(${rubyBytes(t.hostname)}, ${t.port}, ${rubyBytes(proxy.host)}, ${proxy.port}${credentials})\n`
    : // nil: no proxy from http_proxy either (the head, written as it is, is not one for a proxy)
      `http = Net::HTTP.new(${rubyBytes(t.hostname)}, ${t.port}, nil)\n`;
  const search = options.searchString
    ? `needle = ${rubyBytes(options.searchString)}.downcase\nresponse.body.to_s.b.each_line { |line| print line if line.downcase.include?(needle) }\n`
    : 'print response.body\n';
  return (
    "require 'net/http'\n\n" +
    '# the request as recorded: its head is written as it is\n' +
    `method = ${rubyBytes(request.method)}\n` +
    `path = ${rubyBytes(t.path)}\n` +
    `head = ${rubyBytes(head)}\n` +
    `body = ${body}\n\n` +
    'class RecordedRequest < Net::HTTPGenericRequest\n' +
    '  def initialize(method, has_body, path, head)\n' +
    "    super(method, has_body, method.upcase != 'HEAD', path)\n" +
    '    @recorded_head = head\n' +
    '  end\n\n' +
    '  def write_header(sock, _version, _path)\n' +
    '    sock.write(@recorded_head)\n' +
    '  end\n' +
    'end\n\n' +
    connect +
    (t.https ? 'http.use_ssl = true\n' : '') +
    (options.untrustedCertificate ? `# ${UNCHECKED}\nhttp.verify_mode = OpenSSL::SSL::VERIFY_NONE\n` : '') +
    `request = RecordedRequest.new(method, ${hasBody(request)}, path, head)\n` +
    (hasBody(request) ? 'request.body = body\n' : '') +
    'response = http.request(request)\n' +
    'puts "#{response.code} #{response.message}"\n' +
    search
  );
}

/**
 * fetch parses its URL: `..` resolved, `\\` made `/`, quotes encoded. When that changes the
 * recorded path, a comment says what goes instead (both are printable ASCII: no line ends in them).
 */
function fetchPathNote(url: string): string {
  const parsed = new URL(url);
  const recorded = pathAsWritten(url);
  const sent = `${parsed.pathname}${parsed.search}`;
  return sent === recorded ? '' : `// fetch sends the path ${sent}, not the recorded ${recorded} (it resolves and encodes a URL's path; the other languages send it as recorded)\n`;
}

/** Methods fetch refuses (it throws a TypeError): the Fetch standard's forbidden ones. */
const FETCH_FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);
/** Methods fetch writes in upper case, whatever the case it is given (the standard's normalize). */
const FETCH_NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
/** Headers Node's fetch adds of its own when the request has none. */
const FETCH_ADDS = ['accept', 'accept-language', 'sec-fetch-mode', 'user-agent', 'accept-encoding'];
/** A header value fetch refuses (it throws): a control character other than tab. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** Names for a comment: printable ASCII only (a line separator would end the comment and make code). */
const commentNames = (headers: Header[]) => [...new Set(headers.map(([name]) => name.replace(/[^\x21-\x7e]/g, '?')))].join(', ');

/**
 * Where fetch cannot send the recorded request as it was, a comment a line saying what goes
 * instead (the other languages send it as recorded); and the headers it can send (a value with
 * a control character left out: fetch would throw on it).
 */
function fetchDifferences(request: CodeRequest, all: Header[]): { notes: string; headers: Header[] } {
  const notes: string[] = [];
  const method = request.method.replace(/[^\x21-\x7e]/g, '?');
  const upper = method.toUpperCase();
  if (FETCH_FORBIDDEN_METHODS.has(upper)) notes.push(`fetch refuses the method ${method} (it throws a TypeError): the other languages send it`);
  else if (method !== upper && FETCH_NORMALIZED_METHODS.has(upper)) notes.push(`fetch sends the method ${upper}, not the recorded ${method}`);
  if ((upper === 'GET' || upper === 'HEAD') && hasBody(request)) notes.push(`fetch sends no body with ${upper}: the recorded body (${request.body.length} bytes) is left out`);
  const refused = all.filter(([, value]) => CONTROL.test(value));
  if (refused.length > 0) notes.push(`fetch refuses a header value with a control character (it throws): ${commentNames(refused)} left out`);
  const headers = all.filter(([, value]) => !CONTROL.test(value));
  const padded = headers.filter(([, value]) => /^[\t ]|[\t ]$/.test(value));
  if (padded.length > 0) notes.push(`fetch trims the spaces around the values of ${commentNames(padded)}`);
  const counts = new Map<string, number>();
  for (const [name] of headers) counts.set(name.toLowerCase(), (counts.get(name.toLowerCase()) ?? 0) + 1);
  const repeated = headers.filter(([name]) => counts.get(name.toLowerCase())! > 1);
  if (repeated.length > 0) notes.push(`fetch sends ${commentNames(repeated)} once, the values joined by ", "`);
  const added = FETCH_ADDS.filter((name) => !has(headers, name));
  if (added.length > 0) notes.push(`fetch adds ${added.join(', ')} where the recorded request had none`);
  return { notes: notes.map((note) => `// ${note}\n`).join(''), headers };
}

function fetchCode(request: CodeRequest, options: CodeOptions): string {
  const { notes, headers } = fetchDifferences(request, sendable(request).filter(([name]) => !FETCH_DROPS.has(name.toLowerCase())));
  const bodyAllowed = request.method.toUpperCase() !== 'GET' && request.method.toUpperCase() !== 'HEAD';
  const body = isText(request.body)
    ? `new TextEncoder().encode(${jsString(request.body.toString('utf8'))})`
    : `Uint8Array.from(atob(${jsString(request.body.toString('base64'))}), (c) => c.charCodeAt(0))`;
  const search = options.searchString
    ? `const needle = ${jsString(options.searchString)}.toLowerCase();\nfor (const line of text.split(/(?<=\\n)/)) if (line.toLowerCase().includes(needle)) process.stdout.write(line);\n`
    : 'process.stdout.write(text);\n';
  return (
    '// Node.js 18 or later (fetch sends no Host, Connection nor framing header of ours: it sets them itself)\n' +
    // the proxy's origin only, as a URL writes it (ASCII: a line separator in a path would end the comment)
    (options.proxy ? `// through a proxy: run with a dispatcher for ${new URL(options.proxy).origin} (undici's ProxyAgent)\n` : '') +
    (options.untrustedCertificate ? `// ${UNCHECKED}\nprocess.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';\n` : '') +
    fetchPathNote(request.url) +
    notes +
    `const response = await fetch(${jsString(request.url)}, {\n` +
    `  method: ${jsString(request.method)},\n` +
    `  headers: [\n${headers.map(([n, v]) => `    [${jsString(n)}, ${jsByteString(v)}],\n`).join('')}  ],\n` +
    (bodyAllowed && hasBody(request) ? `  body: ${body},\n` : '') +
    "  redirect: 'manual',\n" +
    '});\n' +
    'console.log(response.status, response.statusText);\n' +
    'const text = await response.text();\n' +
    search
  );
}

/** The request as HTTP/1.1 bytes: origin-form target (absolute with a proxy), Host from the URL when none was recorded. */
function raw(request: CodeRequest, options: CodeOptions): Buffer {
  return Buffer.concat([wireHead(request, options.proxy !== undefined, options), request.body]);
}

/** A request no client library can send as recorded: a header name HTTP cannot carry (a HAR may hold any). */
export class CodeError extends Error {}

/** The code of each language asked for, in their order, one after another. */
export function requestAsCode(request: CodeRequest, languages: readonly Language[], given: CodeOptions = {}): Buffer {
  const options = { ...given, untrustedCertificate: given.untrustedCertificate === true && target(request.url).https };
  // curl reads `-H @file` as a file of headers; the libraries refuse such names or send them altered
  const odd = languages.some((l) => l !== 'raw') ? sendable(request).find(([name]) => !TOKEN.test(name)) : undefined;
  if (odd) throw new CodeError(`${JSON.stringify(odd[0].slice(0, 100))} is not a header name HTTP can carry (the raw language writes it as recorded)`);
  const parts = languages.map((language) => {
    switch (language) {
      case 'bash': return Buffer.from(bash(request, options));
      case 'python': return Buffer.from(python(request, options));
      case 'php': return Buffer.from(php(request, options));
      case 'ruby': return Buffer.from(ruby(request, options));
      case 'fetch': return Buffer.from(fetchCode(request, options));
      case 'raw': return raw(request, options);
    }
  });
  return Buffer.concat(parts.flatMap((part, i) => (i === 0 ? [part] : [Buffer.from('\n'), part])));
}
