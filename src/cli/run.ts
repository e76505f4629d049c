import { pullCommand } from './commands';
import { CliError, isAbortError } from './errors';
import { Connection } from './host';
import { repl } from './repl';
import { RunOptions, Session } from './session';

export {
  AUDIO_EXTENSIONS,
  extractImages,
  IMAGE_EXTENSIONS,
  inferThink,
  parseParameter,
  parseThink,
  requestFormat,
  WordWrapper,
} from './session';
export type { RunOptions } from './session';

async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of input) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `llamad run MODEL [PROMPT...]`: pulls MODEL first when the server does not have it (as Ollama), then a one-shot answer for a prompt argument and/or piped stdin (stdin first, as
 * Ollama), else the REPL (also on a non-TTY stdin with --interactive, for scripting). Embedding models print the
 * JSON vector. While the model loads and until the first output, a spinner runs on a terminal stderr (with the load
 * percentage from /api/events; Session.startWaiting).
 */
export async function runCommand(
  conn: Connection,
  model: string,
  promptWords: string[],
  opts: RunOptions,
  input: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
): Promise<void> {
  const s = new Session(conn, model, opts);
  try {
    await s.load(model);
  } catch (err) {
    // As `ollama run`: a model that is not here is pulled first, then run.
    if ((err as { status_code?: number }).status_code !== 404) throw err;
    await pullCommand(conn, model, Boolean(opts.insecure));
    await s.load(model);
  }
  const prompts = [...promptWords];
  // As Ollama: a prompt argument, a piped stdin or a redirected stdout each make the run one-shot.
  const interactive =
    opts.interactive || (promptWords.length === 0 && Boolean(input.isTTY) && Boolean(process.stdout.isTTY));
  if (!interactive && !input.isTTY) {
    const piped = await readAll(input);
    if (piped) prompts.unshift(piped);
  }
  if (s.capabilities.includes('embedding')) {
    // cmd/cmd.go `RunHandler` / `generateEmbedding`: --truncate only when given, --dimensions when > 0.
    const input = prompts.join(' ');
    if (input === '') {
      throw new CliError(`embedding models require input text. Usage: ollama run ${model} "your text here"`);
    }
    const res = await conn.client.embed({
      model,
      input,
      ...(opts.keepalive ? { keep_alive: opts.keepalive } : {}),
      ...(opts.truncate !== undefined ? { truncate: opts.truncate } : {}),
      ...(opts.dimensions && opts.dimensions > 0 ? { dimensions: opts.dimensions } : {}),
    } as Parameters<typeof conn.client.embed>[0]);
    if (res.embeddings.length === 0) throw new CliError('no embeddings returned');
    process.stdout.write(`${JSON.stringify(res.embeddings[0])}\n`);
    return;
  }
  if (!interactive) {
    const stop = () => s.current?.abort();
    process.on('SIGINT', stop);
    try {
      await s.generate(prompts.join(' '));
    } catch (err) {
      if (isAbortError(err)) return; // as Ollama: Ctrl-C ends the answer where it stopped
      throw err;
    } finally {
      process.off('SIGINT', stop);
    }
    return;
  }
  // Preload (an empty generate, with `think` so an unsupported value fails here), as cmd/cmd.go `loadOrUnloadModel`,
  // under its spinner (with the load's percentage from /api/events where the server has it).
  const waiting = s.startWaiting();
  try {
    await waiting.ready;
    await conn.client.generate({
      model,
      prompt: '',
      ...(opts.keepalive ? { keep_alive: opts.keepalive } : {}),
      ...(s.think !== undefined ? { think: s.think } : {}),
    } as Parameters<typeof conn.client.generate>[0] & { stream?: false });
  } finally {
    waiting.indicator?.stop();
  }
  await repl(s, input);
}
