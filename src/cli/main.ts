#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cpCommand,
  createCommand,
  listCommand,
  psCommand,
  pullCommand,
  pushCommand,
  rmCommand,
  showCommand,
  stopCommand,
} from './commands';
import {
  ArgRule,
  checkArgs,
  cobraParseError,
  COMMAND_ENV,
  envDocs,
  exitQuietlyOnClosedOutput,
  heartbeat,
  normalizeArgv,
  parseBoolFlag,
  parseIntFlag,
} from './cobra';
import { CliError, errorText } from './errors';
import { connect } from './host';
import { launchClaude, launchCodex } from './launch';
import { buildCommand } from './build';
import { rpcWorkerCommand } from './rpc-worker';
import { parseThink, runCommand, RunOptions } from './run';

/** This package's version (package.json two folders above dist/src/cli). */
function packageVersion(): string {
  for (const p of [join(__dirname, '..', '..', '..', 'package.json'), join(__dirname, '..', '..', 'package.json')]) {
    try {
      return (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version;
    } catch {
      // try the next layout
    }
  }
  return '0.0.0';
}

/** Runs a command body; prints `Error: <message>` and sets a non-zero exit code on failure. */
function action<A extends unknown[]>(fn: (...args: A) => Promise<number | void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const code = await fn(...args);
      if (typeof code === 'number') process.exitCode = code;
    } catch (err) {
      process.stderr.write(`Error: ${errorText(err)}\n`);
      process.exitCode = err instanceof CliError ? err.exitCode : 1;
    }
  };
}

async function printVersion(): Promise<void> {
  const mine = packageVersion();
  try {
    const { version } = await connect().client.version();
    process.stdout.write(`ollama version is ${version}\nllamad version is ${mine}\n`);
  } catch {
    process.stdout.write('Warning: could not connect to a running Ollama instance\n');
    process.stdout.write(`Warning: client version is ${mine} (llamad)\n`);
  }
}

/** What the preAction hook checks before a command's action: cobra's argument rule and Ollama's heartbeat. */
const SPECS = new WeakMap<Command, { rule: ArgRule; heartbeat: boolean }>();

/**
 * Declares a command the way cmd/cmd.go `NewCLI` does: `use` is its usage (`show MODEL`), `rule` its cobra `Args`,
 * `heartbeat` its `PreRunE: checkServerHeartbeat`; the help ends with its `Environment Variables:` block.
 */
function declare(program: Command, use: string, short: string, rule: ArgRule, heartbeat = true): Command {
  const [name, ...usage] = use.split(' ');
  const cmd = program
    .command(name)
    .description(short)
    .argument('[args...]')
    .usage(`${usage.length > 0 ? `${usage.join(' ')} ` : ''}[flags]`);
  const docs = envDocs(COMMAND_ENV[name] ?? ['OLLAMA_HOST']);
  if (docs) cmd.addHelpText('after', docs);
  SPECS.set(cmd, { rule, heartbeat });
  return cmd;
}

/** Builds the `llamad` command tree (cmd/cmd.go `NewCLI`: the same commands, arguments, flags and help texts). */
export function buildProgram(): Command {
  const program = new Command();
  program
    .name('llamad')
    .description('Large language model runner')
    .option('-v, --version', 'Show version information')
    .enablePositionalOptions()
    .helpCommand(true)
    .allowExcessArguments(true)
    .exitOverride()
    .configureOutput({ outputError: () => undefined })
    .hook('preAction', async (_root, cmd) => {
      const spec = SPECS.get(cmd);
      if (!spec) return;
      checkArgs(spec.rule, cmd.args);
      if (spec.heartbeat) await heartbeat(connect());
    })
    .action(
      action(async (_opts: unknown, cmd: Command) => {
        if (cmd.args.length > 0) throw new CliError(`unknown command "${cmd.args[0]}" for "ollama"`);
        if (program.opts<{ version?: boolean }>().version) return printVersion();
        program.outputHelp();
      }),
    );

  declare(program, 'serve', 'Start ollama', { exact: 0 }, false)
    .alias('start')
    .action(() => {
      // The daemon entry point starts itself when loaded (dist/src/main.js).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require(join(__dirname, '..', 'main.js'));
    });

  declare(program, 'create MODEL', 'Create a model', { exact: 1 })
    .option('-f, --file <path>', 'Name of the Modelfile (default "Modelfile")')
    .option('-q, --quantize <type>', 'Quantize model to this level (e.g. q4_K_M)')
    .option('--draft-quantize <type>', 'Quantize draft model to this level')
    .action(
      action(([model]: string[], o: { file?: string; quantize?: string; draftQuantize?: string }) =>
        createCommand(connect(), model, o.file || 'Modelfile', o.quantize, o.draftQuantize),
      ),
    );

  declare(program, 'show MODEL', 'Show information for a model', { exact: 1 })
    .option('--license', 'Show license of a model')
    .option('--modelfile', 'Show Modelfile of a model')
    .option('--parameters', 'Show parameters of a model')
    .option('--template', 'Show template of a model')
    .option('--system', 'Show system message of a model')
    .option('-v, --verbose', 'Show detailed model information')
    .action(action(([model]: string[], o: Record<string, boolean>) => showCommand(connect(), model, o)));

  declare(program, 'run MODEL [PROMPT]', 'Run a model', { min: 1 })
    .option('--keepalive <duration>', 'Duration to keep a model loaded (e.g. 5m)')
    .option('--verbose', 'Show timings for response')
    .option('--insecure', 'Use an insecure registry')
    .option('--nowordwrap', "Don't wrap words to the next line automatically")
    .option('--format <format>', 'Response format (e.g. json)')
    .option('--think <level>', 'Enable thinking mode: true/false or high/medium/low for supported models')
    .option('--hidethinking', 'Hide thinking output (if provided)')
    .option(
      '--truncate <bool>',
      'For embedding models: truncate inputs exceeding context length (default: true). Set --truncate=false to error instead',
    )
    .option('--dimensions <int>', 'Truncate output embeddings to specified dimension (embedding models only)')
    .addOption(
      new Option('--interactive', 'Force the interactive session on a non-terminal stdin (scripting)').hideHelp(),
    )
    .action(
      action(([model, ...prompt]: string[], o: Record<string, string | boolean | undefined>) => {
        const opts: RunOptions = {
          ...o,
          truncate: typeof o.truncate === 'string' ? parseBoolFlag('truncate', o.truncate) : undefined,
          dimensions: typeof o.dimensions === 'string' ? parseIntFlag('dimensions', o.dimensions) : undefined,
        } as RunOptions;
        parseThink(opts.think); // an invalid --think=VALUE fails before anything is sent
        return runCommand(connect(), model, prompt, opts);
      }),
    );

  declare(program, 'stop MODEL', 'Stop a running model', { exact: 1 }).action(
    action(([model]: string[]) => stopCommand(connect(), model)),
  );

  declare(program, 'pull MODEL', 'Pull a model from a registry', { exact: 1 })
    .option('--insecure', 'Use an insecure registry')
    .action(
      action(([model]: string[], o: { insecure?: boolean }) => pullCommand(connect(), model, Boolean(o.insecure))),
    );

  declare(program, 'push MODEL', 'Push a model to a registry', { exact: 1 })
    .option('--insecure', 'Use an insecure registry')
    .action(
      action(([model]: string[], o: { insecure?: boolean }) => pushCommand(connect(), model, Boolean(o.insecure))),
    );

  declare(program, 'list', 'List models', 'any')
    .alias('ls')
    .action(action(([prefix]: string[]) => listCommand(connect(), prefix)));

  declare(program, 'ps', 'List running models', 'any').action(
    action(([prefix]: string[]) => psCommand(connect(), prefix)),
  );

  declare(program, 'cp SOURCE DESTINATION', 'Copy a model', { exact: 2 }).action(
    action(([source, destination]: string[]) => cpCommand(connect(), source, destination)),
  );

  declare(program, 'rm MODEL [MODEL...]', 'Remove a model', { min: 1 }).action(
    action((models: string[]) => rmCommand(connect(), models)),
  );

  program
    .command('build')
    .description(
      'Build the native addon from source (llama.cpp and the addon, for this machine) when no prebuilt package ' +
        'fits: needs cmake and a C++17 compiler',
    )
    .option('--backend <backend>', 'cpu, cuda, vulkan or metal (LLAMAD_BACKEND)')
    .action(action((o: { backend?: string }) => Promise.resolve(buildCommand(o))));

  program
    .command('rpc-worker')
    .description(
      'Run a llama.cpp RPC worker (the vendored rpc-server) that holds layers for a daemon on another machine ' +
        '(LLAMAD_RPC_SERVERS or PARAMETER rpc there). Unauthenticated: keep it on a private network',
    )
    .option('--host <host>', 'Address to listen on (IPv4 or host name)', '127.0.0.1')
    .option('--port <port>', 'Port to listen on', '50052')
    .option('--threads <n>', 'CPU threads of the worker (default: half the cores)')
    .action(action((o: { host: string; port: string; threads?: string }) => rpcWorkerCommand(o)));

  program
    .command('launch')
    .description('Point an agent CLI (claude, codex) at this server and start it')
    .argument('<integration>', 'claude or codex')
    .argument('[args...]', 'arguments for the agent (after --)')
    .option('--model <model>', 'Model to use (must support tools)')
    .option('--config', 'Only write the configuration (codex) or print the environment (claude); do not start it')
    .action(
      action(async (integration: string, args: string[], o: { model?: string; config?: boolean }) => {
        if (integration === 'codex') return launchCodex(connect(), o, args);
        if (integration === 'claude') return launchClaude(connect(), o, args);
        throw new CliError(`unknown integration '${integration}': use claude or codex`);
      }),
    );

  return program;
}

/** Runs the command line: cobra's parse errors, `Error: <text>` and exit code 1 on failure (Ollama's main.go). */
export async function main(argv: string[]): Promise<void> {
  exitQuietlyOnClosedOutput();
  try {
    await buildProgram().parseAsync(normalizeArgv(argv));
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return;
      process.stderr.write(`Error: ${cobraParseError(err) ?? err.message.replace(/^error: /, '')}\n`);
      process.exitCode = 1;
      return;
    }
    process.stderr.write(`Error: ${errorText(err)}\n`);
    process.exitCode = err instanceof CliError ? err.exitCode : 1;
  }
}

if (require.main === module) void main(process.argv);
