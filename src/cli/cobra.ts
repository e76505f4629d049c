/**
 * The parts of the `ollama` command line that come from cobra and pflag rather than from Ollama's own code: argument
 * count errors, flag errors, the per-command `Environment Variables:` help block (cmd/cmd.go `appendEnvDocs`), and the
 * server heartbeat every client command runs first (cmd/cmd.go `checkServerHeartbeat`).
 */
import { CommanderError } from 'commander';
import { CliError, isConnectionError, NOT_RUNNING } from './errors';
import { Connection } from './host';

/** An argument rule of a cobra command (`cobra.ExactArgs(n)`, `cobra.MinimumNArgs(n)`, or any). */
export type ArgRule = { exact: number } | { min: number } | 'any';

/** cobra's `ExactArgs`/`MinimumNArgs` errors: `accepts 1 arg(s), received 0`, `requires at least 1 arg(s), only received 0`. */
export function checkArgs(rule: ArgRule, args: string[]): void {
  if (rule === 'any') return;
  if ('exact' in rule && args.length !== rule.exact) {
    throw new CliError(`accepts ${rule.exact} arg(s), received ${args.length}`);
  }
  if ('min' in rule && args.length < rule.min) {
    throw new CliError(`requires at least ${rule.min} arg(s), only received ${args.length}`);
  }
}

/** One line of Ollama's envconfig `AsMap` (name and description). */
const ENV: Record<string, string> = {
  OLLAMA_DEBUG: 'Show additional debug information (e.g. OLLAMA_DEBUG=1)',
  OLLAMA_HOST: 'IP Address for the ollama server (default 127.0.0.1:11434)',
  OLLAMA_CONTEXT_LENGTH: 'Context length to use unless otherwise specified (default: 4k/32k/256k based on VRAM)',
  OLLAMA_FLASH_ATTENTION: 'Enabled flash attention',
  OLLAMA_KV_CACHE_TYPE: 'Quantization type for the K/V cache (default: f16)',
  OLLAMA_KEEP_ALIVE: 'The duration that models stay loaded in memory (default "5m")',
  OLLAMA_LOAD_TIMEOUT: 'How long to allow model loads to stall before giving up (default "5m")',
  OLLAMA_MAX_LOADED_MODELS: 'Maximum number of loaded models per GPU',
  OLLAMA_MAX_QUEUE: 'Maximum number of queued requests',
  OLLAMA_MODELS: 'The path to the models directory',
  OLLAMA_NUM_PARALLEL: 'Maximum number of parallel requests',
  OLLAMA_NOHISTORY: 'Do not preserve readline history',
  OLLAMA_ORIGINS: 'A comma separated list of allowed origins',
};

/**
 * The variables each command's help lists, as cmd/cmd.go `NewCLI` passes them to `appendEnvDocs`: OLLAMA_HOST for
 * the client commands, OLLAMA_HOST and OLLAMA_NOHISTORY for `run` (Ollama also lists OLLAMA_EDITOR, which llamad's
 * REPL does not use), and for `serve` the server variables of Ollama's list that llamad reads.
 */
export const COMMAND_ENV: Record<string, string[]> = {
  run: ['OLLAMA_HOST', 'OLLAMA_NOHISTORY'],
  serve: [
    'OLLAMA_DEBUG',
    'OLLAMA_HOST',
    'OLLAMA_CONTEXT_LENGTH',
    'OLLAMA_KEEP_ALIVE',
    'OLLAMA_MAX_LOADED_MODELS',
    'OLLAMA_MAX_QUEUE',
    'OLLAMA_MODELS',
    'OLLAMA_NUM_PARALLEL',
    'OLLAMA_ORIGINS',
    'OLLAMA_FLASH_ATTENTION',
    'OLLAMA_KV_CACHE_TYPE',
    'OLLAMA_LOAD_TIMEOUT',
  ],
};

/**
 * cmd/cmd.go `appendEnvDocs`: a blank line, `Environment Variables:`, then `      %-27s   %s` per variable. Returned
 * without its last newline (commander's `addHelpText` adds one).
 */
export function envDocs(names: string[]): string {
  if (names.length === 0) return '';
  return `\nEnvironment Variables:\n${names.map((n) => `      ${n.padEnd(27)}   ${ENV[n] ?? ''}`).join('\n')}`;
}

/**
 * Rewrites commander's parse errors in pflag/cobra's words: `unknown flag: --x`, `unknown shorthand flag: 'x' in -x`,
 * `flag needs an argument: --x`, `unknown command "x" for "ollama"`. Returns undefined for other errors.
 */
export function cobraParseError(err: CommanderError): string | undefined {
  const opt = /'(-[^' ]*)/.exec(err.message)?.[1] ?? '';
  switch (err.code) {
    case 'commander.unknownOption':
      return opt.startsWith('--') ? `unknown flag: ${opt}` : `unknown shorthand flag: '${opt.slice(1, 2)}' in ${opt}`;
    case 'commander.optionMissingArgument':
      return opt.startsWith('--')
        ? `flag needs an argument: ${opt}`
        : `flag needs an argument: '${opt.slice(1)}' in ${opt}`;
    case 'commander.unknownCommand':
      return `unknown command "${/'([^']*)'/.exec(err.message)?.[1] ?? ''}" for "ollama"`;
    default:
      return undefined;
  }
}

/**
 * pflag's optional-value flags (`NoOptDefVal`): `--think` alone means `--think=true` and the next word stays an
 * argument (`run m --think why` asks "why"), a value only with `=`. Same for the bool `--truncate`. Stops at `--`.
 */
export function normalizeArgv(argv: string[]): string[] {
  const out: string[] = [];
  let rest = false;
  for (const a of argv) {
    if (a === '--') rest = true;
    if (!rest && (a === '--think' || a === '--truncate')) out.push(`${a}=true`);
    else out.push(a);
  }
  return out;
}

/** pflag's bool parsing (Go's `strconv.ParseBool`), with its error for a bad `--NAME=value`. */
export function parseBoolFlag(name: string, v: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw new CliError(`invalid argument "${v}" for "--${name}" flag: strconv.ParseBool: parsing "${v}": invalid syntax`);
}

/** pflag's int parsing (Go's `strconv.ParseInt`), with its error for a bad `--NAME value`. */
export function parseIntFlag(name: string, v: string): number {
  if (!/^[+-]?\d+$/.test(v)) {
    throw new CliError(
      `invalid argument "${v}" for "--${name}" flag: strconv.ParseInt: parsing "${v}": invalid syntax`,
    );
  }
  return Number(v);
}

/**
 * cmd/cmd.go `checkServerHeartbeat`: `HEAD /` before a client command; when nothing answers, the command fails with
 * `could not connect to ollama server, run 'ollama serve' to start it` before printing anything else.
 */
export async function heartbeat(conn: Connection): Promise<void> {
  try {
    const res = await fetch(`${conn.baseUrl}/`, { method: 'HEAD', headers: conn.headers });
    await res.body?.cancel().catch(() => undefined);
  } catch (err) {
    if (isConnectionError(err)) throw new CliError(NOT_RUNNING);
    throw err;
  }
}

/**
 * Leaves quietly when stdout or stderr is closed by the reader (`llamad run m hi | head -c 10`), as a Go program dies
 * of SIGPIPE: no stack trace, exit status 141 (128 + SIGPIPE, what a shell reports for `ollama`).
 */
export function exitQuietlyOnClosedOutput(): void {
  const onError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') process.exit(141);
    throw err;
  };
  process.stdout.on('error', onError);
  process.stderr.on('error', onError);
}
