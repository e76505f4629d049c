import type { ShowResponse } from 'ollama';
import { CliError, notFoundAsTyped } from './errors';
import { goFloat, goTable, goValue, humanNumber, stringWidth } from './gofmt';
import { Connection } from './host';

type Out = Pick<NodeJS.WriteStream, 'write'>;

/** The fields of /api/show that the `ollama` client reads beyond the `ollama` package's ShowResponse type. */
interface ShowExtra {
  capabilities?: string[];
  projector_info?: Record<string, unknown>;
  tensors?: Array<{ name: string; type: string; shape: number[] }>;
  remote_model?: string;
  remote_host?: string;
  requires?: string;
}

/**
 * A metadata value as cmd/cmd.go `showInfo` prints it: bools and strings as they are, numbers with `%g`, arrays
 * shortened to what fits 10 columns (`[! " # ...+17 more]`), anything else as its Go type name.
 */
export function metadataValue(v: unknown): string {
  if (typeof v === 'boolean' || typeof v === 'string' || typeof v === 'number') return goValue(v);
  if (Array.isArray(v)) {
    const targetWidth = 10;
    let shown = 0;
    let total = 1;
    for (let i = 0; i < v.length; i++) {
      const width = stringWidth(goValue(v[i])) + (i > 0 ? 2 : 0);
      if (total + width > targetWidth && i > 0) break;
      total += width;
      shown++;
    }
    if (shown < v.length) return `${goValue(v.slice(0, shown)).replace(/\]$/, '')} ...+${v.length - shown} more]`;
    return goValue(v);
  }
  return v === null || v === undefined ? '<nil>' : 'map[string]interface {}';
}

/** cmd/cmd.go `showInfo`'s `head`: the first `n` non-empty trimmed lines, then `...` when there are more. */
function head(s: string, n: number): string[][] {
  const lines = s
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const rows = lines.slice(0, n).map((l) => ['', l]);
  if (lines.length > n) rows.push(['', '...']);
  return rows;
}

/**
 * The `ollama show MODEL` summary, as cmd/cmd.go `showInfo`: Model, Capabilities, Projector, Parameters, then with
 * `verbose` Metadata and Tensors, then System and License; each section `  Title` then a tablewriter table and a
 * blank line.
 */
export function showInfo(resp: ShowResponse, verbose: boolean): string {
  const r = resp as ShowResponse & ShowExtra;
  let s = '';
  const section = (title: string, rows: string[][], colWidth = 30) => {
    s += `  ${title}\n${goTable(rows, colWidth)}\n`;
  };
  const info = r.model_info as unknown as Record<string, unknown> | undefined;
  const details = (r.details ?? {}) as Partial<ShowResponse['details']>;
  const model: string[][] = [];
  if (r.remote_host) {
    model.push(['', 'Remote model', r.remote_model ?? '']);
    model.push(['', 'Remote URL', r.remote_host]);
  }
  if (info) {
    const arch = typeof info['general.architecture'] === 'string' ? info['general.architecture'] : '';
    if (arch) model.push(['', 'architecture', arch]);
    let params = details.parameter_size ?? '';
    const count = info['general.parameter_count'];
    if (!params && typeof count === 'number') params = humanNumber(count);
    if (params) model.push(['', 'parameters', params]);
    for (const [key, label] of [
      ['context_length', 'context length'],
      ['embedding_length', 'embedding length'],
    ]) {
      const v = info[`${arch}.${key}`];
      if (typeof v === 'number') model.push(['', label, goFloat(v)]);
    }
  } else {
    model.push(['', 'architecture', details.family ?? '']);
    model.push(['', 'parameters', details.parameter_size ?? '']);
  }
  model.push(['', 'quantization', details.quantization_level ?? '']);
  if (r.requires) model.push(['', 'requires', r.requires]);
  section('Model', model);

  if (r.capabilities && r.capabilities.length > 0) {
    section(
      'Capabilities',
      r.capabilities.map((c) => ['', c]),
    );
  }
  if (r.projector_info) {
    const p = r.projector_info;
    const arch = typeof p['general.architecture'] === 'string' ? p['general.architecture'] : '';
    const rows: string[][] = [];
    if (arch) rows.push(['', 'architecture', arch]);
    if (typeof p['general.parameter_count'] === 'number') {
      rows.push(['', 'parameters', humanNumber(p['general.parameter_count'])]);
    }
    const value = (suffix: string) =>
      ['vision', 'audio'].map((m) => p[`${arch}.${m}.${suffix}`]).find((v) => typeof v === 'number') as
        | number
        | undefined;
    const emb = value('embedding_length');
    if (emb !== undefined) rows.push(['', 'embedding length', goFloat(emb)]);
    const dim = value('projection_dim');
    if (dim !== undefined) rows.push(['', 'dimensions', goFloat(dim)]);
    section('Projector', rows);
  }
  if (r.parameters) {
    section(
      'Parameters',
      r.parameters
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => ['', ...l.split(/\s+/).filter(Boolean)]),
    );
  }
  if (info && verbose) {
    section(
      'Metadata',
      Object.keys(info)
        .sort()
        .map((k) => ['', k, metadataValue(info[k])]),
    );
  }
  if (verbose && r.tensors && r.tensors.length > 0) {
    section(
      'Tensors',
      r.tensors.map((t) => ['', t.name, t.type, goValue(t.shape)]),
    );
  }
  if (r.system) section('System', head(r.system, 2), 100);
  if (r.license) section('License', head(r.license, 2), 100);
  return s;
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

/**
 * `llamad show MODEL [--modelfile|--parameters|--template|--system|--license] [-v]`, as cmd/cmd.go `ShowHandler`:
 * `--license`, `--modelfile` and `--parameters` print the text and a newline (`fmt.Println`), `--system` and
 * `--template` the text as it is (`fmt.Print`).
 */
export async function showCommand(conn: Connection, model: string, opts: ShowOptions, out: Out = process.stdout) {
  const flags = (['license', 'modelfile', 'parameters', 'system', 'template'] as const).filter((f) => opts[f]);
  if (flags.length > 1) {
    throw new CliError(
      "only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified",
    );
  }
  let resp: ShowResponse;
  try {
    resp = await conn.client.show({ model, verbose: opts.verbose } as Parameters<typeof conn.client.show>[0]);
  } catch (err) {
    throw notFoundAsTyped(err, model);
  }
  if ((resp as ShowResponse & ShowExtra).capabilities?.includes('image')) {
    throw new CliError('image generation models are not currently supported');
  }
  if (flags.length === 1) {
    const text = (resp as unknown as Record<string, string | undefined>)[flags[0]] ?? '';
    out.write(flags[0] === 'system' || flags[0] === 'template' ? text : `${text}\n`);
    return;
  }
  out.write(showInfo(resp, Boolean(opts.verbose)));
}
