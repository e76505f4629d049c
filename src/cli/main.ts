#!/usr/bin/env node
import { Command, Option } from 'commander';
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
import { CliError, errorText } from './errors';
import { connect } from './host';
import { launchClaude, launchCodex } from './launch';
import { rpcWorkerCommand } from './rpc-worker';
import { runCommand } from './run';

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

/** Builds the `llamad` command tree. */
export function buildProgram(): Command {
  const program = new Command();
  program
    .name('llamad')
    .description('Large language model runner: an Ollama-compatible daemon and its command line')
    .option('-v, --version', 'Show version information')
    .enablePositionalOptions()
    .helpCommand(true)
    .showHelpAfterError()
    .action(
      action(async () => {
        if (program.opts<{ version?: boolean }>().version) return printVersion();
        program.help();
      }),
    );

  program
    .command('serve')
    .alias('start')
    .description(
      'Start the daemon in the foreground (env: OLLAMA_HOST, OLLAMA_MODELS, OLLAMA_KEEP_ALIVE, OLLAMA_NUM_PARALLEL, ' +
        'LLAMAD_API_KEYS, … — see docs)',
    )
    .action(() => {
      // The daemon entry point starts itself when loaded (dist/src/main.js).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require(join(__dirname, '..', 'main.js'));
    });

  program
    .command('create')
    .description('Create a model from a Modelfile')
    .argument('<model>')
    .option('-f, --file <path>', 'Name of the Modelfile', 'Modelfile')
    .option('-q, --quantize <type>', 'Quantize model to this level (e.g. q4_K_M)')
    .action(
      action((model: string, o: { file: string; quantize?: string }) =>
        createCommand(connect(), model, o.file, o.quantize),
      ),
    );

  program
    .command('show')
    .description('Show information for a model')
    .argument('<model>')
    .option('--license', 'Show license of a model')
    .option('--modelfile', 'Show Modelfile of a model')
    .option('--parameters', 'Show parameters of a model')
    .option('--template', 'Show template of a model')
    .option('--system', 'Show system message of a model')
    .option('-v, --verbose', 'Show detailed model information')
    .action(action((model: string, o: Record<string, boolean>) => showCommand(connect(), model, o)));

  program
    .command('run')
    .description('Run a model')
    .argument('<model>')
    .argument('[prompt...]')
    .option('--format <format>', 'Response format (e.g. json)')
    .option('--keepalive <duration>', 'Duration to keep a model loaded (e.g. 5m)')
    .option('--verbose', 'Show timings for response')
    .option('--insecure', 'Use an insecure registry')
    .option('--nowordwrap', "Don't wrap words to the next line automatically")
    .option('--think [level]', 'Enable thinking mode: true/false or high/medium/low for supported models')
    .option('--hidethinking', 'Hide thinking output (if provided)')
    .addOption(
      new Option('--interactive', 'Force the interactive session on a non-terminal stdin (scripting)').hideHelp(),
    )
    .action(
      action((model: string, prompt: string[], o: Record<string, string | boolean>) => {
        // `--think` takes an optional value: in `run m --think why?`, "why?" is the prompt, not a level.
        if (typeof o.think === 'string' && !['true', 'false', 'high', 'medium', 'low'].includes(o.think)) {
          prompt.unshift(o.think);
          o.think = true;
        }
        return runCommand(connect(), model, prompt, o);
      }),
    );

  program
    .command('stop')
    .description('Stop a running model')
    .argument('<model>')
    .action(action((model: string) => stopCommand(connect(), model)));

  program
    .command('pull')
    .description('Pull a model from a registry')
    .argument('<model>')
    .option('--insecure', 'Use an insecure registry')
    .action(action((model: string, o: { insecure?: boolean }) => pullCommand(connect(), model, Boolean(o.insecure))));

  program
    .command('push')
    .description('Push a model to a registry')
    .argument('<model>')
    .option('--insecure', 'Use an insecure registry')
    .action(action((model: string, o: { insecure?: boolean }) => pushCommand(connect(), model, Boolean(o.insecure))));

  program
    .command('list')
    .alias('ls')
    .description('List models')
    .argument('[prefix]')
    .action(action((prefix: string | undefined) => listCommand(connect(), prefix)));

  program
    .command('ps')
    .description('List running models')
    .action(action(() => psCommand(connect())));

  program
    .command('cp')
    .description('Copy a model')
    .argument('<source>')
    .argument('<destination>')
    .action(action((source: string, destination: string) => cpCommand(connect(), source, destination)));

  program
    .command('rm')
    .description('Remove a model')
    .argument('<model...>')
    .action(action((models: string[]) => rmCommand(connect(), models)));

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

if (require.main === module) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      process.stderr.write(`Error: ${errorText(err)}\n`);
      process.exitCode = 1;
    });
}
