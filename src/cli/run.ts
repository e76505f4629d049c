import { pullCommand } from './commands';
import { isAbortError } from './errors';
import { Connection } from './host';
import { repl } from './repl';
import { RunOptions, Session } from './session';

export { extractImages, parseParameter, parseThink, WordWrapper } from './session';
export type { RunOptions } from './session';

async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of input) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `llamad run MODEL [PROMPT...]`: pulls MODEL first when the server does not have it (as Ollama), then a one-shot answer for a prompt argument and/or piped stdin (stdin first, as
 * Ollama), else the REPL (also on a non-TTY stdin with --interactive, for scripting). Embedding models print the
 * JSON vector.
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
  const interactive = opts.interactive || (promptWords.length === 0 && Boolean(input.isTTY));
  if (!interactive && !input.isTTY) {
    const piped = await readAll(input);
    if (piped) prompts.unshift(piped);
  }
  if (s.capabilities.includes('embedding') && !s.capabilities.includes('completion')) {
    const res = await conn.client.embed({ model, input: prompts.join(' ') });
    process.stdout.write(`${JSON.stringify(res.embeddings[0] ?? [])}\n`);
    return;
  }
  if (!interactive) {
    const stop = () => s.current?.abort();
    process.on('SIGINT', stop);
    try {
      await s.generate(prompts.join(' '));
    } catch (err) {
      if (isAbortError(err)) {
        process.stdout.write('\n');
        return;
      }
      throw err;
    } finally {
      process.off('SIGINT', stop);
    }
    return;
  }
  // Preload (an empty generate), as Ollama does before the first prompt.
  await conn.client.generate({ model, prompt: '', ...(opts.keepalive ? { keep_alive: opts.keepalive } : {}) });
  await repl(s, input);
}
