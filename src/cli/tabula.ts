#!/usr/bin/env node
/**
 * `tabula`: the command line of the ledger. `serve` and `token` run the service and mint development
 * tokens; `backup` and `audit` work on a database itself (database-commands.ts); every other command
 * talks to a service over HTTP through the SDK (@tabula/client).
 * Exit status: 0 done, 1 the service or the network failed, 2 bad usage, 3 a verification failed.
 */
import type { ParseArgsConfig } from 'node:util';
import { ApiError, TabulaClient, TabulaError } from '@tabula/client';
import { clientSettings, readEnvironment, URL_DEFAULT, UsageError, type Environment } from './cli-config.js';
import { parseCommandLine } from './command-line.js';
import { balanceCommand, blockCommand, blocksCommand, historyCommand, statsCommand, submitCommand, transactionCommand, type Context } from './commands.js';
import type { Output } from './output.js';
import { verifyCommand } from './verify-command.js';
import { checkpointCommand, verifySinceCommand, witnessCommand, type ClientMaker } from './checkpoint-commands.js';
import { watchCommand } from './watch-command.js';
import { priceCommand, SLIPPAGE_DEFAULT, swapCommand } from './market-commands.js';

type Options = NonNullable<ParseArgsConfig['options']>;

const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const VERIFY_RETRY_DELAY_MS_MAX = 60_000;

const CLIENT_OPTIONS: Options = {
  url: { type: 'string' },
  jwt: { type: 'string' },
  'api-key': { type: 'string' },
  'timeout-ms': { type: 'string' },
  json: { type: 'boolean', default: false },
};

const COMMAND_OPTIONS: Record<string, Options> = {
  submit: {
    from: { type: 'string' }, to: { type: 'string' }, amount: { type: 'string' }, token: { type: 'string' }, type: { type: 'string' },
    metadata: { type: 'string' }, 'idempotency-key': { type: 'string' }, wait: { type: 'boolean', default: false },
  },
  tx: { proof: { type: 'boolean', default: false } },
  balance: {},
  history: { limit: { type: 'string' }, cursor: { type: 'string' } },
  blocks: { limit: { type: 'string' }, offset: { type: 'string' } },
  block: {},
  stats: {},
  swap: {
    from: { type: 'string' }, to: { type: 'string' }, slippage: { type: 'string' }, 'min-receive': { type: 'string' },
    'idempotency-key': { type: 'string' }, wait: { type: 'boolean', default: false },
  },
  price: { history: { type: 'string' }, limit: { type: 'string' } },
  verify: { from: { type: 'string' }, to: { type: 'string' }, progress: { type: 'boolean', default: false }, since: { type: 'string' }, balance: { type: 'string' }, 'public-key': { type: 'string' } },
  checkpoint: { out: { type: 'string' }, 'public-key': { type: 'string' } },
  witness: { peers: { type: 'string', multiple: true }, 'public-key': { type: 'string' } },
  watch: { types: { type: 'string' }, account: { type: 'string' }, after: { type: 'string' }, limit: { type: 'string' }, verify: { type: 'boolean', default: false } },
};

export const HELP = `tabula: the command line of the Tabula ledger

  tabula serve [--port <n>] [--host <address>]   run the service (configured by its environment, see README)
  tabula token <user> [--admin] [--ttl <seconds>]   mint a development token the service accepts

  tabula submit --from <id> --to <id> --amount <decimal> --token <TAB|USDG> [--type transfer|mint|burn]
                [--metadata <json>] [--idempotency-key <key>] [--wait]
  tabula tx <tx_hash> [--proof]                  a transaction (or its inclusion proof)
  tabula balance <user_id>
  tabula history <user_id> [--limit <1..100>] [--cursor <next_cursor>]
                                                 the account's transactions, newest first, a page at a time
  tabula blocks [--limit <1..100>] [--offset <n>]
  tabula block <number|latest>
  tabula stats
  tabula swap <amount> <token> [--from <id>] [--to <id>] [--slippage <percent>|--min-receive <decimal>]
              [--idempotency-key <key>] [--wait]
                                                 swap on the market: quote, then submit with min_receive =
                                                 quote × (1 − slippage) (default ${SLIPPAGE_DEFAULT}); --from defaults to
                                                 the token's subject, --to to --from
  tabula price [--history <1m|1h|1d>] [--limit <1..1000>]
                                                 the current price, or the price candles, oldest first
  tabula verify [--from <n>] [--to <n>] [--progress]
                                                 walk the chain, recompute every root, hash and link
  tabula verify <tx_hash>                        recompute a transaction's hash and check its inclusion proof
  tabula verify --balance <user>                 check a user's balances against the newest block's balance root
  tabula checkpoint [--out <file>] [--public-key <base64>]
                                                 fetch the latest signed checkpoint, verify its signature (with
                                                 --public-key, else the service's published key), store it in <file>
  tabula verify --since <file> [--public-key <base64>]
                                                 prove the service's latest history extends the stored checkpoint
                                                 (one consistency proof, O(log n)); a fork exits 3
  tabula witness --peers <url> --peers <url>... [--public-key <base64>]
                                                 compare several instances' (or observers') checkpoints
  tabula watch [--types <type,...>] [--account <user>] [--after <sequence>] [--limit <n>] [--verify]
                                                 follow the event log live, one line per event (reconnects and
                                                 resumes by itself); from --after (0: the first event), else from
                                                 now; ends after --limit events, or on Ctrl-C / SIGTERM (exit 0)

  tabula backup <file> [--database-url <url>]   an online backup of an SQLite ledger (safe while the service runs),
                                                 checked with PRAGMA integrity_check; for PostgreSQL it prints
                                                 the pg_dump commands to use instead
  tabula audit [--database-url <url>] [--progress]
                                                 the offline audit of a database, no service needed: recompute every
                                                 hash, root and link, replay every transaction from genesis, and
                                                 compare outcomes, running totals, balances and accounts
  (the database: --database-url, else env DATABASE_URL, else sqlite:./data/ledger.db; a file path is an SQLite file)

Options of the commands that talk to a service:
  --url <url>        the service (env TABULA_URL, default ${URL_DEFAULT})
  --jwt <token>      bearer token (env TABULA_TOKEN)
  --api-key <key>    X-API-Key (env TABULA_API_KEY)
  --timeout-ms <n>   per request attempt (default 10000)
  --json             print JSON (the API's records, amounts exact) instead of text

Exit status: 0 done, 1 the service or network failed, 2 bad usage, 3 a verification failed.
`;

export type Io = { stdout: Output['stdout']; stderr: Output['stderr']; env: Environment };

/** Runs one command line and returns the exit status (`serve` keeps running and returns null). */
export async function runCli(argv: string[], io: Io): Promise<number | null> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.stdout.write(HELP);
    return command === undefined ? EXIT_USAGE : 0;
  }
  try {
    if (command === 'serve') return await serve(rest, io.env);
    if (command === 'token') return await token(rest, io);
    if (command === 'backup' || command === 'audit') return await databaseCommand(command, rest, io);
    return await clientCommand(command, rest, io);
  } catch (error) {
    return report(error, io);
  }
}

// The service's modules (Fastify, SQLite, jose) load only for the commands that need them, so the
// client commands start fast.
async function serve(args: string[], env: Environment): Promise<null> {
  const { values } = parseCommandLine(args, { port: { type: 'string' }, host: { type: 'string' } }, false);
  const overrides = { ...(values.port === undefined ? {} : { PORT: values.port }), ...(values.host === undefined ? {} : { HOST: values.host }) };
  const [{ loadConfig }, { runService }] = await Promise.all([import('../config.js'), import('../run-service.js')]);
  runService(() => loadConfig({ ...env, ...overrides }, { stdout_terminal: process.stdout.isTTY === true }));
  return null;
}

async function token(args: string[], io: Io): Promise<number> {
  const [{ loadConfig }, { mintDevToken }] = await Promise.all([import('../config.js'), import('./dev-token.js')]);
  io.stdout.write(`${await mintDevToken(args, loadConfig(io.env))}\n`);
  return 0;
}

async function databaseCommand(command: 'backup' | 'audit', args: string[], io: Io): Promise<number> {
  const { runDatabaseCommand } = await import('./database-commands.js');
  return runDatabaseCommand(command, args, io);
}

async function clientCommand(command: string, args: string[], io: Io): Promise<number> {
  const options = COMMAND_OPTIONS[command];
  if (options === undefined) throw new UsageError(`unknown command "${command}"; see tabula --help`);
  const { values, positionals } = parseCommandLine(args, { ...CLIENT_OPTIONS, ...options });
  const settings = clientSettings({ url: text(values.url), token: text(values.jwt), 'api-key': text(values['api-key']), 'timeout-ms': text(values['timeout-ms']) }, io.env);
  const make: ClientMaker = (url, trust) => new TabulaClient({
    baseUrl: url ?? settings.url,
    timeoutMs: settings.timeout_ms,
    ...(settings.token === undefined ? {} : { jwt: settings.token }),
    ...(settings.api_key === undefined ? {} : { apiKey: settings.api_key }),
    // A long verify may meet the rate limit: wait out its Retry-After rather than give up.
    ...(command === 'verify' ? { retry: { max_delay_ms: VERIFY_RETRY_DELAY_MS_MAX } } : {}),
    ...(trust === undefined ? {} : { trust }),
  });
  const client = make(null);
  const context: Context = { client, out: { json: values.json === true, stdout: io.stdout, stderr: io.stderr }, values, positionals };
  switch (command) {
    case 'checkpoint': return checkpointCommand(context, make);
    case 'witness': return witnessCommand(context, make, Array.isArray(values.peers) ? values.peers.map(String) : []);
    case 'submit': await submitCommand(context); return 0;
    case 'tx': await transactionCommand(context); return 0;
    case 'balance': await balanceCommand(context); return 0;
    case 'history': await historyCommand(context); return 0;
    case 'blocks': await blocksCommand(context); return 0;
    case 'block': await blockCommand(context); return 0;
    case 'stats': await statsCommand(context); return 0;
    case 'swap': await swapCommand(context, settings.token); return 0;
    case 'price': await priceCommand(context); return 0;
    case 'watch': return watchCommand(context, stopSignal());
    default: return typeof values.since === 'string' ? verifySinceCommand(context, make, values.since) : verifyCommand(context);
  }
}

/** Aborted by Ctrl-C or SIGTERM; only `watch` listens, so every other command keeps the default handling. */
function stopSignal(): AbortSignal {
  const stop = new AbortController();
  for (const name of ['SIGINT', 'SIGTERM'] as const) process.once(name, () => stop.abort(new Error(`stopped by ${name}`)));
  return stop.signal;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function report(error: unknown, io: Io): number {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    io.stderr.write(`${error.message}\n(see tabula --help)\n`);
    return EXIT_USAGE;
  }
  if (error instanceof ApiError) {
    const fields = error.problem.errors?.map((item) => `\n  ${item.field}: ${item.message}`).join('') ?? '';
    io.stderr.write(`error ${error.status} ${error.code}: ${error.problem.detail}${fields}\n`);
    return EXIT_FAILED;
  }
  io.stderr.write(`error: ${error instanceof TabulaError || error instanceof Error ? error.message : String(error)}\n`);
  return EXIT_FAILED;
}

const env = readEnvironment();
runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env }).then((status) => {
  if (status !== null) process.exitCode = status;
});
