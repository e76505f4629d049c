import { readFileSync } from 'node:fs';
import type { ShowResponse } from 'ollama';
import { CliError } from './errors';
import { humanBytes, humanTime, processor, table } from './format';
import { Connection } from './host';
import { prepareModelfile } from './modelfile';
import { ProgressRecord, ProgressView, showProgress } from './progress';

type Out = Pick<NodeJS.WriteStream, 'write'>;

/** `llamad list [PREFIX]`: NAME ID SIZE MODIFIED, as `ollama list`. */
export async function listCommand(conn: Connection, prefix: string | undefined, out: Out = process.stdout) {
  const { models } = await conn.client.list();
  const rows = models
    .filter((m) => !prefix || m.name.toLowerCase().startsWith(prefix.toLowerCase()))
    .map((m) => [m.name, (m.digest ?? '').slice(0, 12), humanBytes(m.size), humanTime(m.modified_at, 'Never')]);
  out.write(table(['NAME', 'ID', 'SIZE', 'MODIFIED'], rows));
}

/** `llamad ps`: NAME ID SIZE PROCESSOR CONTEXT UNTIL, as `ollama ps`. */
export async function psCommand(conn: Connection, out: Out = process.stdout) {
  const { models } = await conn.client.ps();
  const now = Date.now();
  const rows = models.map((m) => {
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

/** Ollama's `format.HumanNumber` (8.0B, 19.7M, 512K). */
export function humanNumber(n: number): string {
  const units: Array<[number, string]> = [
    [1e9, 'B'],
    [1e6, 'M'],
    [1e3, 'K'],
  ];
  for (const [size, unit] of units) {
    if (n >= size) {
      const v = n / size;
      return v === Math.floor(v) ? `${v.toFixed(0)}${unit}` : `${v.toFixed(1)}${unit}`;
    }
  }
  return String(n);
}

function section(title: string, rows: string[][]): string {
  const widths = rows.reduce((w, r) => r.map((c, i) => Math.max(w[i] ?? 0, c.length)), [] as number[]);
  let s = `  ${title}\n`;
  for (const r of rows) s += `    ${r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i] + 4) : c)).join('')}\n`;
  return s + '\n';
}

/** The `ollama show MODEL` summary: Model, Capabilities, Parameters, System, License (and Metadata with -v). */
export function showInfo(resp: ShowResponse, verbose: boolean): string {
  const info = (resp.model_info ?? {}) as unknown as Record<string, unknown>;
  const arch = String(info['general.architecture'] ?? resp.details?.family ?? '');
  const rows: string[][] = [];
  if (arch) rows.push(['architecture', arch]);
  const count = info['general.parameter_count'];
  const params = typeof count === 'number' ? humanNumber(count) : resp.details?.parameter_size;
  if (params) rows.push(['parameters', params]);
  const ctx = info[`${arch}.context_length`];
  if (ctx !== undefined) rows.push(['context length', String(ctx)]);
  const emb = info[`${arch}.embedding_length`];
  if (emb !== undefined) rows.push(['embedding length', String(emb)]);
  if (resp.details?.quantization_level) rows.push(['quantization', resp.details.quantization_level]);
  let s = '\n' + section('Model', rows);
  const caps = (resp as unknown as { capabilities?: string[] }).capabilities ?? [];
  if (caps.length > 0) {
    s += section(
      'Capabilities',
      caps.map((c) => [c]),
    );
  }
  if (resp.parameters) {
    s += section(
      'Parameters',
      resp.parameters
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => {
          const m = /^(\S+)\s+(.*)$/.exec(l.trim());
          return m ? [m[1], m[2]] : [l.trim()];
        }),
    );
  }
  if (resp.system) {
    s += section(
      'System',
      firstLines(resp.system).map((l) => [l]),
    );
  }
  if (resp.license) {
    s += section(
      'License',
      firstLines(resp.license).map((l) => [l]),
    );
  }
  if (verbose) {
    const meta = Object.entries(info)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
    s += section('Metadata', meta);
  }
  return s;
}

function firstLines(text: string): string[] {
  const lines = text.trim().split('\n');
  return lines.length > 2 ? [...lines.slice(0, 2), '...'] : lines;
}

/** Options of `llamad show`. */
export interface ShowOptions {
  modelfile?: boolean;
  parameters?: boolean;
  template?: boolean;
  system?: boolean;
  license?: boolean;
  verbose?: boolean;
}

/** `llamad show MODEL [--modelfile|--parameters|--template|--system|--license] [-v]`. */
export async function showCommand(conn: Connection, model: string, opts: ShowOptions, out: Out = process.stdout) {
  const flags = (['license', 'modelfile', 'parameters', 'system', 'template'] as const).filter((f) => opts[f]);
  if (flags.length > 1) {
    throw new CliError(
      "only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified",
    );
  }
  const resp = await conn.client.show({ model, verbose: opts.verbose } as Parameters<typeof conn.client.show>[0]);
  if (flags.length === 1) {
    const text = (resp as unknown as Record<string, string | undefined>)[flags[0]] ?? '';
    out.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
    return;
  }
  out.write(showInfo(resp, Boolean(opts.verbose)));
}

/** `llamad cp SOURCE DESTINATION`. */
export async function cpCommand(conn: Connection, source: string, destination: string, out: Out = process.stdout) {
  await conn.client.copy({ source, destination });
  out.write(`copied '${source}' to '${destination}'\n`);
}

/** `llamad rm MODEL...`: stops a loaded model first, as Ollama does. */
export async function rmCommand(conn: Connection, models: string[], out: Out = process.stdout) {
  for (const model of models) {
    try {
      await conn.client.generate({ model, prompt: '', keep_alive: 0 });
    } catch {
      // not loaded, or not a generating model: nothing to stop
    }
    await conn.client.delete({ model });
    out.write(`deleted '${model}'\n`);
  }
}

/** `llamad stop MODEL`: unloads it (empty generate with keep_alive 0). */
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

/** `llamad pull MODEL [--insecure]`. */
export async function pullCommand(conn: Connection, model: string, insecure: boolean) {
  const stream = await conn.client.pull({ model, insecure, stream: true });
  await showProgress(stream as AsyncIterable<ProgressRecord>);
}

/** `llamad push MODEL [--insecure]`. */
export async function pushCommand(conn: Connection, model: string, insecure: boolean) {
  const stream = await conn.client.push({ model, insecure, stream: true });
  await showProgress(stream as AsyncIterable<ProgressRecord>);
}

/** `llamad create MODEL [-f Modelfile] [-q QUANT]`. */
export async function createCommand(conn: Connection, model: string, file: string, quantize: string | undefined) {
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
    const request = { model, modelfile, stream: true as const, ...(quantize ? { quantize } : {}) };
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
