/** Command-line flags and ASSESSD_* environment variables -> start() options (flags win). */
import { parseArgs } from 'node:util';
import { OptionError, resolveOptions, type ResolvedOptions, type StartOptions } from './options.js';

export type CliOptions = Omit<ResolvedOptions, 'log'>;

export type CliCommand = { kind: 'help' } | { kind: 'version' } | { kind: 'serve'; options: CliOptions };

export const USAGE = `Usage: assessd [options]
       assessd export --session ID [--data-dir DIR] [--out FILE]   write a session bundle (no server running)
       assessd import FILE [--data-dir DIR] [--name NAME]          import a session bundle (no server running)
       assessd import-har FILE --target ID [--data-dir DIR] [--scope-only]
                                                                   import a HAR as a target's transactions (no server running)

Options:
  --host <address>            address to listen on (env ASSESSD_HOST; default 127.0.0.1)
  --port <port>               port to listen on, 0 for any free one (env ASSESSD_PORT; default 8009)
  --data-dir <dir>            where the JSON store lives (env ASSESSD_DATA_DIR; default: data/ in a clone,
                              ./assessd-data for an installed package, assessd-data beside the single file)
  --file-server-port <port>   port of the output file server /output_files/ redirects to (default 8010)
  --max-body <bytes>          largest request body accepted (default 1048576)
  --max-import-body <bytes>   largest session bundle an import accepts (default 67108864, 64 MiB)
  --max-har-body <bytes>      largest HAR a transactions import accepts (default 1073741824, 1 GiB)
  --allowed-hosts <names>     host names allowed beside IP literals, localhost and this machine's name,
                              comma-separated; .lab.example allows a domain and its subdomains;
                              * turns the Host check off (unsafe) (env ASSESSD_ALLOWED_HOSTS)
  --token <token>             the API token (env ASSESSD_TOKEN, which keeps it out of the process list);
                              default: generated once and kept in DATA_DIR/token (the API runs programs)
  --no-token                  serve without a token, on a loopback host only (unsafe: any local
                              user or program can then run the configured tools)
  --workers <n>               plugins run at once (env ASSESSD_WORKERS; default: the machine's cores)
  --run-timeout <seconds>     a run's time limit, paused time not counted (env ASSESSD_RUN_TIMEOUT; default 3600)
  --check-timeout <seconds>   each request of a built-in check, connect to last byte (env ASSESSD_CHECK_TIMEOUT;
                              default 10)
  --proxy-host <address>      where the intercepting proxy listens (env ASSESSD_PROXY_HOST; default 127.0.0.1;
                              beyond loopback it needs the token as its Basic password)
  --proxy-port <port>         the proxy's port (env ASSESSD_PROXY_PORT; default 8008, or a free one with --port 0)
  --no-proxy                  no proxy (and no CA for it)
  (env ASSESSD_COMPACT_AFTER: journal bytes before it is folded into the snapshots;
   default: once it outgrows 4 MiB and the snapshots)
  -h, --help                  print this help
  -v, --version               print the version`;

/** A bad flag or value: main prints the message on one line and exits 2. */
export class UsageError extends Error {}

/** `maxBody` -> `--max-body`: messages name the flag the user typed. */
const flagName = (option: string) => `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** The server's flags (parseArgs' options). */
const OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  'file-server-port': { type: 'string' },
  'max-body': { type: 'string' },
  'max-import-body': { type: 'string' },
  'max-har-body': { type: 'string' },
  'allowed-hosts': { type: 'string' },
  token: { type: 'string' },
  'no-token': { type: 'boolean' },
  workers: { type: 'string' },
  'run-timeout': { type: 'string' },
  'check-timeout': { type: 'string' },
  'proxy-host': { type: 'string' },
  'proxy-port': { type: 'string' },
  'no-proxy': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/**
 * `--port -1` as `--port=-1`: parseArgs takes a value that begins with a dash for a flag, and its
 * hint (write `--port=-XYZ`) only leads to the value's own error; this way that error comes at once.
 * No flag is a dash and a digit.
 */
function negativeValuesJoined(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const next = argv[i + 1];
    const flag = /^--([a-z-]+)$/.exec(argv[i]!)?.[1];
    if (flag !== undefined && Object.hasOwn(OPTIONS, flag) && OPTIONS[flag as keyof typeof OPTIONS].type === 'string' && next !== undefined && /^-[0-9]/.test(next)) {
      out.push(`${argv[i]}=${next}`);
      i++;
    } else {
      out.push(argv[i]!);
    }
  }
  return out;
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv, defaultDataDir: string): CliCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: negativeValuesJoined(argv),
      strict: true,
      allowPositionals: false,
      options: OPTIONS,
    }));
  } catch (err) {
    const lines = (err as Error).message.split('\n');
    // parseArgs says what to write instead on its last line (`--workers=-XYZ`): `--workers -1` read as a flag
    const how = lines[0]!.includes('ambiguous') && lines.length > 1 ? ` ${lines.at(-1)}` : '';
    throw new UsageError(`${lines[0]}${how} (see --help)`);
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const options: StartOptions = {
    host: values.host ?? env.ASSESSD_HOST,
    port: values.port ?? env.ASSESSD_PORT,
    // an empty ASSESSD_DATA_DIR is no setting, as an empty ASSESSD_TOKEN
    dataDir: values['data-dir'] ?? (env.ASSESSD_DATA_DIR || defaultDataDir),
    fileServerPort: values['file-server-port'],
    maxBody: values['max-body'],
    maxImportBody: values['max-import-body'],
    maxHarBody: values['max-har-body'],
    allowedHosts: values['allowed-hosts'] ?? env.ASSESSD_ALLOWED_HOSTS,
    // an explicit --no-token wins over a token in the environment
    token: values['no-token'] ? undefined : (values.token ?? (env.ASSESSD_TOKEN || undefined)),
    noToken: values['no-token'],
    compactAfter: env.ASSESSD_COMPACT_AFTER,
    workers: values.workers ?? env.ASSESSD_WORKERS,
    runTimeout: values['run-timeout'] ?? env.ASSESSD_RUN_TIMEOUT,
    checkTimeout: values['check-timeout'] ?? env.ASSESSD_CHECK_TIMEOUT,
    // --no-proxy wins over the proxy's settings in the environment, as --no-token over a token there
    proxyHost: values['no-proxy'] ? undefined : (values['proxy-host'] ?? env.ASSESSD_PROXY_HOST),
    proxyPort: values['no-proxy'] ? undefined : (values['proxy-port'] ?? env.ASSESSD_PROXY_PORT),
    noProxy: values['no-proxy'],
  };
  if (values['no-token'] && values.token !== undefined) throw new UsageError('--token and --no-token exclude each other');
  for (const flag of ['proxy-port', 'proxy-host'] as const) {
    if (values['no-proxy'] && values[flag] !== undefined) throw new UsageError(`--${flag} and --no-proxy exclude each other`);
  }
  try {
    // a value is named where it came from: the flag, else the environment's variable
    const { log: _log, ...resolved } = resolveOptions(options, (option) => {
      const flag = flagName(option);
      const variable = option === 'compactAfter' ? 'ASSESSD_COMPACT_AFTER' : `ASSESSD_${flag.slice(2).replace(/-/g, '_').toUpperCase()}`;
      return (values as Record<string, unknown>)[flag.slice(2)] === undefined && env[variable] !== undefined ? variable : flag;
    });
    return { kind: 'serve', options: resolved };
  } catch (err) {
    if (err instanceof OptionError) throw new UsageError(err.message);
    throw err;
  }
}
