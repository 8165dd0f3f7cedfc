/** Command-line flags and ASSESSD_* environment variables -> options (flags win). */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';

export interface CliOptions {
  host: string;
  port: number;
  dataDir: string;
  fileServerPort: number;
  maxBody: number;
  /** Largest session bundle POST /api/v1/bundles/ accepts, in bytes. */
  maxImportBody: number;
  /** Journal bytes after which it is folded into the snapshots (env ASSESSD_COMPACT_AFTER). */
  compactAfter?: number;
}

export type CliCommand = { kind: 'help' } | { kind: 'version' } | { kind: 'serve'; options: CliOptions };

export const USAGE = `Usage: assessd [options]
       assessd export --session ID [--data-dir DIR] [--out FILE]   write a session bundle (no server running)
       assessd import FILE [--data-dir DIR] [--name NAME]          import a session bundle (no server running)

Options:
  --host <address>            address to listen on (env ASSESSD_HOST; default 127.0.0.1)
  --port <port>               port to listen on, 0 for any free one (env ASSESSD_PORT; default 8009)
  --data-dir <dir>            where the JSON store lives (env ASSESSD_DATA_DIR; default the project's data/)
  --file-server-port <port>   port of the output file server /output_files/ redirects to (default 8010)
  --max-body <bytes>          largest request body accepted (default 1048576)
  --max-import-body <bytes>   largest session bundle an import accepts (default 67108864, 64 MiB)
  (env ASSESSD_COMPACT_AFTER: journal bytes before it is folded into the snapshots;
   default: once it outgrows 4 MiB and the snapshots)
  -h, --help                  print this help
  -v, --version               print the version`;

/** A bad flag or value: main prints the message on one line and exits non-zero. */
export class UsageError extends Error {}

function port(name: string, raw: string): number {
  const n = /^[0-9]{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new UsageError(`${name} must be a port number from 0 to 65535, not ${JSON.stringify(raw)}`);
  return n;
}

function bytes(name: string, raw: string | undefined, fallback: number): number {
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${name} must be a positive number of bytes`);
  return n;
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv, defaultDataDir: string): CliCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        'file-server-port': { type: 'string' },
        'max-body': { type: 'string' },
        'max-import-body': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split('\n')[0]} (see --help)`);
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const host = values.host ?? env.ASSESSD_HOST ?? '127.0.0.1';
  if (host.trim() === '') throw new UsageError('--host must not be empty');
  const maxBody = bytes('--max-body', values['max-body'], 1024 * 1024);
  const maxImportBody = bytes('--max-import-body', values['max-import-body'], 64 * 1024 * 1024);
  const compactAfter = env.ASSESSD_COMPACT_AFTER === undefined ? undefined : Number(env.ASSESSD_COMPACT_AFTER);
  if (compactAfter !== undefined && !(Number.isSafeInteger(compactAfter) && compactAfter >= 0)) {
    throw new UsageError('ASSESSD_COMPACT_AFTER must be a number of bytes');
  }
  return {
    kind: 'serve',
    options: {
      host,
      port: port('--port', values.port ?? env.ASSESSD_PORT ?? '8009'),
      dataDir: resolve(values['data-dir'] ?? env.ASSESSD_DATA_DIR ?? defaultDataDir),
      fileServerPort: port('--file-server-port', values['file-server-port'] ?? '8010'),
      maxBody,
      maxImportBody,
      compactAfter,
    },
  };
}
