/** Command-line flags and ASSESSD_* environment variables -> start() options (flags win). */
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

/** The server's flags: each a string or a boolean, `-h` and `-v` the short ones. */
const FLAGS: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
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
};
const SHORT = new Map(Object.entries(FLAGS).flatMap(([name, flag]) => (flag.short ? [[flag.short, name] as const] : [])));

/**
 * node:util's parseArgs, strict and without positionals, for FLAGS, with its messages: it is compiled
 * with its first call, which cost every start ~1.5 ms. `--name value`, `--name=value`, `-h`, `-hv`;
 * the last of a repeated flag wins; a string flag's value may not look like a flag (`--port -1`).
 */
export function parseFlags(args: readonly string[]): Record<string, string | boolean> {
  const values: Record<string, string | boolean> = {};
  const shown = (name: string) => `${FLAGS[name]!.short ? `-${FLAGS[name]!.short}, ` : ''}--${name}`;
  const unknown = (raw: string) => new UsageError(`Unknown option '${raw}'`);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      if (i + 1 < args.length) throw new UsageError(`Unexpected argument '${args[i + 1]}'. This command does not take positional arguments`);
      break;
    }
    if (arg.startsWith('--')) {
      const equals = arg.indexOf('=');
      const name = equals === -1 ? arg.slice(2) : arg.slice(2, equals);
      const flag = Object.hasOwn(FLAGS, name) ? FLAGS[name]! : undefined;
      if (!flag) throw unknown(`--${name}`);
      if (flag.type === 'boolean') {
        if (equals !== -1) throw new UsageError(`Option '${shown(name)}' does not take an argument`);
        values[name] = true;
      } else if (equals !== -1) {
        values[name] = arg.slice(equals + 1);
      } else {
        const value = args[++i];
        if (value === undefined) throw new UsageError(`Option '${shown(name)} <value>' argument missing`);
        if (value.length > 1 && value.startsWith('-')) throw new UsageError(`Option '${shown(name)}' argument is ambiguous.`);
        values[name] = value;
      }
    } else if (arg.length > 1 && arg.startsWith('-')) {
      for (const letter of arg.slice(1)) {
        const name = SHORT.get(letter);
        if (name === undefined) throw unknown(`-${letter}`);
        values[name] = true;
      }
    } else {
      throw new UsageError(`Unexpected argument '${arg}'. This command does not take positional arguments`);
    }
  }
  return values;
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv, defaultDataDir: string): CliCommand {
  let values: Record<string, string | boolean>;
  try {
    values = parseFlags(argv);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (see --help)`);
  }
  const string = (name: string) => values[name] as string | undefined;
  const boolean = (name: string) => values[name] as boolean | undefined;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const options: StartOptions = {
    host: string('host') ?? env.ASSESSD_HOST,
    port: string('port') ?? env.ASSESSD_PORT,
    dataDir: string('data-dir') ?? env.ASSESSD_DATA_DIR ?? defaultDataDir,
    fileServerPort: string('file-server-port'),
    maxBody: string('max-body'),
    maxImportBody: string('max-import-body'),
    maxHarBody: string('max-har-body'),
    allowedHosts: string('allowed-hosts') ?? env.ASSESSD_ALLOWED_HOSTS,
    // an explicit --no-token wins over a token in the environment
    token: boolean('no-token') ? undefined : (string('token') ?? (env.ASSESSD_TOKEN || undefined)),
    noToken: boolean('no-token'),
    compactAfter: env.ASSESSD_COMPACT_AFTER,
    workers: string('workers') ?? env.ASSESSD_WORKERS,
    runTimeout: string('run-timeout') ?? env.ASSESSD_RUN_TIMEOUT,
    checkTimeout: string('check-timeout') ?? env.ASSESSD_CHECK_TIMEOUT,
    proxyHost: string('proxy-host') ?? env.ASSESSD_PROXY_HOST,
    proxyPort: string('proxy-port') ?? env.ASSESSD_PROXY_PORT,
    noProxy: boolean('no-proxy'),
  };
  if (values['no-token'] && values.token !== undefined) throw new UsageError('--token and --no-token exclude each other');
  try {
    const { log: _log, ...resolved } = resolveOptions(options, (option) =>
      option === 'compactAfter' ? 'ASSESSD_COMPACT_AFTER' : flagName(option),
    );
    return { kind: 'serve', options: resolved };
  } catch (err) {
    if (err instanceof OptionError) throw new UsageError(err.message);
    throw err;
  }
}
