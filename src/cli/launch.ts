import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, isConnectionError, NOT_RUNNING } from './errors';
import { Connection } from './host';

/** The provider id written into Codex's config. */
export const CODEX_PROVIDER = 'llamad';

/** A TOML basic string. */
function tomlString(s: string): string {
  return JSON.stringify(s);
}

/**
 * Merges llamad's settings into a Codex config.toml text without touching anything else: the top-level `model` and
 * `model_provider` keys are replaced (or added before the first table), the `[model_providers.llamad]` table is
 * replaced (or appended). Other tables, keys and comments stay as written. (A minimal line-based merge: it does not
 * understand multi-line strings that contain lines starting with `[`.)
 */
export function mergeCodexConfig(text: string, settings: { model: string; baseUrl: string; envKey?: string }): string {
  const lines = text === '' ? [] : text.replace(/\r\n/g, '\n').split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const isHeader = (l: string) => /^\s*\[/.test(l);
  const headerName = (l: string) =>
    /^\s*\[\[?\s*([^\]]+?)\s*\]\]?/
      .exec(l)?.[1]
      .replace(/\s*\.\s*/g, '.')
      .replace(/"/g, '');
  const firstHeader = lines.findIndex(isHeader);
  const topEnd = firstHeader < 0 ? lines.length : firstHeader;
  const top = lines.slice(0, topEnd).filter((l) => !/^\s*(model|model_provider)\s*=/.test(l));
  const rest = lines.slice(topEnd);
  const kept: string[] = [];
  let skipping = false;
  for (const l of rest) {
    if (isHeader(l)) skipping = headerName(l) === `model_providers.${CODEX_PROVIDER}`;
    if (!skipping) kept.push(l);
  }
  while (top.length > 0 && top[top.length - 1].trim() === '') top.pop();
  while (kept.length > 0 && kept[kept.length - 1].trim() === '') kept.pop();
  const head = [`model = ${tomlString(settings.model)}`, `model_provider = ${tomlString(CODEX_PROVIDER)}`];
  const table = [
    `[model_providers.${CODEX_PROVIDER}]`,
    `name = "llamad"`,
    `base_url = ${tomlString(settings.baseUrl)}`,
    `wire_api = "responses"`,
    ...(settings.envKey ? [`env_key = ${tomlString(settings.envKey)}`] : []),
  ];
  const parts = [[...head, ...top].join('\n')];
  if (kept.length > 0) parts.push(kept.join('\n'));
  parts.push(table.join('\n'));
  return parts.join('\n\n') + '\n';
}

/**
 * Checks that a model exists and can call tools; without `model`, picks the first local model that can. Throws
 * with what to pull or create otherwise.
 */
export async function toolModel(conn: Connection, model: string | undefined): Promise<string> {
  try {
    if (model) {
      let caps: string[];
      try {
        caps = ((await conn.client.show({ model })) as unknown as { capabilities?: string[] }).capabilities ?? [];
      } catch (err) {
        if (err instanceof Error && /not found/.test(err.message)) {
          throw new CliError(
            `model '${model}' not found: pull it with 'llamad pull ${model}' or create it with ` +
              `'llamad create ${model} -f Modelfile'`,
          );
        }
        throw err;
      }
      if (!caps.includes('tools')) {
        throw new CliError(
          `model '${model}' does not support tools, which agents need: pull or create a model whose template ` +
            `handles tools (e.g. 'llamad pull qwen3') and pass it with --model`,
        );
      }
      return model;
    }
    const { models } = await conn.client.list();
    for (const m of models) {
      const info = (await conn.client.show({ model: m.name })) as unknown as { capabilities?: string[] };
      if (info.capabilities?.includes('tools')) return m.name;
    }
    throw new CliError(
      "no local model supports tools: pull or create one (e.g. 'llamad pull qwen3') and pass it with --model",
    );
  } catch (err) {
    if (isConnectionError(err)) throw new CliError(NOT_RUNNING);
    throw err;
  }
}

/** Runs a program with inherited stdio; resolves with its exit code. */
function runProgram(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: 'inherit', env });
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') reject(new CliError(`${bin} not found in PATH: install it first`));
      else reject(err);
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Options of `llamad launch`. */
export interface LaunchOptions {
  model?: string;
  config?: boolean;
}

/** `llamad launch codex`: writes the provider into $CODEX_HOME/config.toml, then runs `codex` (unless --config). */
export async function launchCodex(conn: Connection, opts: LaunchOptions, args: string[]): Promise<number> {
  const model = await toolModel(conn, opts.model);
  const home = process.env.CODEX_HOME || join(homedir(), '.codex');
  const file = join(home, 'config.toml');
  const before = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const after = mergeCodexConfig(before, {
    model,
    baseUrl: `${conn.baseUrl}/v1`,
    envKey: process.env.LLAMAD_API_KEY ? 'LLAMAD_API_KEY' : undefined,
  });
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.llamad-tmp`;
  writeFileSync(tmp, after);
  renameSync(tmp, file);
  process.stderr.write(`Codex configured to use '${model}' through llamad (${file})\n`);
  if (opts.config) return 0;
  return runProgram(process.env.LLAMAD_CODEX_BIN || 'codex', args, process.env);
}

/** The environment Claude Code needs to talk to this server with `model`. */
export function claudeEnv(conn: Connection, model: string, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...base,
    ANTHROPIC_BASE_URL: conn.baseUrl,
    ANTHROPIC_AUTH_TOKEN: base.LLAMAD_API_KEY?.trim() || 'llamad',
    ANTHROPIC_API_KEY: '',
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
  };
}

/** `llamad launch claude`: runs `claude` ($LLAMAD_CLAUDE_BIN) with the environment pointing at this server. */
export async function launchClaude(conn: Connection, opts: LaunchOptions, args: string[]): Promise<number> {
  const model = await toolModel(conn, opts.model);
  const env = claudeEnv(conn, model, process.env);
  if (opts.config) {
    for (const k of Object.keys(env).filter((k) => k.startsWith('ANTHROPIC_'))) {
      process.stdout.write(`export ${k}=${JSON.stringify(env[k] ?? '')}\n`);
    }
    return 0;
  }
  return runProgram(process.env.LLAMAD_CLAUDE_BIN || 'claude', args, env);
}
