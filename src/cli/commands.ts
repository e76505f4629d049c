import { readFileSync } from 'node:fs';
import { CliError, notFoundAsTyped } from './errors';
import { humanBytes, humanTime, processor, table } from './format';
import { Connection } from './host';
import { prepareModelfile } from './modelfile';
import { ProgressRecord, ProgressView, showProgress } from './progress';

export { humanNumber } from './gofmt';
export { showCommand, showInfo } from './show';
export type { ShowOptions } from './show';

type Out = Pick<NodeJS.WriteStream, 'write'>;

/** `llamad list [PREFIX]`: NAME ID SIZE MODIFIED, as `ollama list`. */
export async function listCommand(conn: Connection, prefix: string | undefined, out: Out = process.stdout) {
  const { models } = await conn.client.list();
  const rows = models
    .filter((m) => !prefix || m.name.toLowerCase().startsWith(prefix.toLowerCase()))
    .map((m) => [m.name, (m.digest ?? '').slice(0, 12), humanBytes(m.size), humanTime(m.modified_at, 'Never')]);
  out.write(table(['NAME', 'ID', 'SIZE', 'MODIFIED'], rows));
}

/** `llamad ps [PREFIX]`: NAME ID SIZE PROCESSOR CONTEXT UNTIL, as cmd/cmd.go `ListRunningHandler` (case-sensitive prefix). */
export async function psCommand(conn: Connection, prefix?: string, out: Out = process.stdout) {
  const { models } = await conn.client.ps();
  const now = Date.now();
  const rows = models
    .filter((m) => !prefix || m.name.startsWith(prefix))
    .map((m) => {
      const expires = new Date(m.expires_at);
      const until = now - expires.getTime() > 0 ? 'Stopping...' : humanTime(expires, 'Never', now);
      const ctx = (m as unknown as { context_length?: number }).context_length;
      return [
        m.name,
        (m.digest ?? '').slice(0, 12),
        humanBytes(m.size),
        processor(m.size, m.size_vram ?? 0),
        ctx ? String(ctx) : '',
        until,
      ];
    });
  out.write(table(['NAME', 'ID', 'SIZE', 'PROCESSOR', 'CONTEXT', 'UNTIL'], rows));
}

/** `llamad cp SOURCE DESTINATION`, as cmd/cmd.go `CopyHandler`. */
export async function cpCommand(conn: Connection, source: string, destination: string, out: Out = process.stdout) {
  try {
    await conn.client.copy({ source, destination });
  } catch (err) {
    throw notFoundAsTyped(err, source, '"');
  }
  out.write(`copied '${source}' to '${destination}'\n`);
}

/** `llamad rm MODEL...`: stops a loaded model first, as cmd/cmd.go `DeleteHandler`. */
export async function rmCommand(conn: Connection, models: string[], out: Out = process.stdout) {
  for (const model of models) {
    try {
      await conn.client.generate({ model, prompt: '', keep_alive: 0 });
    } catch {
      // not loaded, or not a generating model: nothing to stop
    }
    try {
      await conn.client.delete({ model });
    } catch (err) {
      throw notFoundAsTyped(err, model);
    }
    out.write(`deleted '${model}'\n`);
  }
}

/** `llamad stop MODEL`: unloads it (empty generate with keep_alive 0), as cmd/cmd.go `StopHandler`. */
export async function stopCommand(conn: Connection, model: string) {
  try {
    await conn.client.generate({ model, prompt: '', keep_alive: 0 });
  } catch (err) {
    if (err instanceof Error && /not found/.test(err.message)) {
      throw new CliError(`couldn't find model "${model}" to stop`);
    }
    throw err;
  }
}

/** `llamad pull MODEL [--insecure]`: progress on stderr, layers named `pulling <12 hex>:` (cmd/cmd.go `pullModelWithProgress`). */
export async function pullCommand(conn: Connection, model: string, insecure: boolean) {
  const stream = await conn.client.pull({ model, insecure, stream: true });
  await showProgress(
    stream as AsyncIterable<ProgressRecord>,
    new ProgressView(process.stderr, Boolean(process.stderr.isTTY), { pullLabels: true }),
  );
}

/**
 * A model name with Ollama's defaults filled in (types/model/name.go `ParseName`): host `registry.ollama.ai`,
 * namespace `library`, tag `latest`.
 */
export function parseModelName(s: string): { host: string; namespace: string; model: string; tag: string } {
  let rest = s;
  let tag = '';
  if (rest.lastIndexOf(':') > rest.lastIndexOf('/')) {
    tag = rest.slice(rest.lastIndexOf(':') + 1);
    rest = rest.slice(0, rest.lastIndexOf(':'));
  }
  const parts = rest.split('/');
  const model = parts.pop() ?? '';
  const namespace = parts.length > 0 ? (parts.pop() ?? '') : '';
  const host = parts.join('/');
  return {
    host: host || 'registry.ollama.ai',
    namespace: namespace || 'library',
    model,
    tag: tag || 'latest',
  };
}

/**
 * Where a pushed model can be found, as cmd/cmd.go `PushHandler` prints it: `host/namespace/model:tag`, or
 * `https://ollama.com/<shortest name without :latest>` for ollama.com.
 */
export function pushDestination(name: string): string {
  const n = parseModelName(name);
  if (n.host.endsWith('.ollama.ai') || n.host.endsWith('.ollama.com')) {
    let shortest = `${n.model}:${n.tag}`;
    if (n.host.toLowerCase() !== 'registry.ollama.ai') shortest = `${n.host}/${n.namespace}/${shortest}`;
    else if (n.namespace.toLowerCase() !== 'library') shortest = `${n.namespace}/${shortest}`;
    return `https://ollama.com/${shortest.replace(/:latest$/, '')}`;
  }
  return `${n.host}/${n.namespace}/${n.model}:${n.tag}`;
}

/** `llamad push MODEL [--insecure]`: progress on stderr, then where the model is on stdout (cmd/cmd.go `PushHandler`). */
export async function pushCommand(conn: Connection, model: string, insecure: boolean, out: Out = process.stdout) {
  try {
    const stream = await conn.client.push({ model, insecure, stream: true });
    await showProgress(stream as AsyncIterable<ProgressRecord>);
  } catch (err) {
    const text = err instanceof Error ? err.message.toLowerCase() : '';
    if (text.includes('access denied') || text.includes('unauthorized')) {
      throw new CliError(
        'you are not authorized to push to this namespace, create the model under a namespace you own',
      );
    }
    throw err;
  }
  out.write(`\nYou can find your model at:\n\n\t${pushDestination(model)}\n`);
}

/**
 * `llamad create MODEL [-f Modelfile] [-q QUANT] [--draft-quantize QUANT]` (Ollama's cmd.CreateHandler; the daemon
 * answers 400 `--draft-quantize requires a DRAFT model` when the Modelfile has no DRAFT).
 */
export async function createCommand(
  conn: Connection,
  model: string,
  file: string,
  quantize: string | undefined,
  draftQuantize?: string,
) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new CliError(`open ${file}: no such file or directory`);
    }
    throw err;
  }
  const view = new ProgressView();
  view.update({ status: 'gathering model components' });
  try {
    const modelfile = await prepareModelfile(conn, text, file, view);
    const request = {
      model,
      modelfile,
      stream: true as const,
      ...(quantize ? { quantize } : {}),
      ...(draftQuantize ? { draft_quantize: draftQuantize } : {}),
    };
    const stream = await conn.client.create(
      request as unknown as Parameters<typeof conn.client.create>[0] & {
        stream: true;
      },
    );
    for await (const p of stream as AsyncIterable<ProgressRecord>) view.update(p);
  } finally {
    view.stop();
  }
}
