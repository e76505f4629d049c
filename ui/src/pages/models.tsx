import { useEffect, useState } from 'preact/hooks';
import { formatBytes, json, listModels, ModelEntry, streamNdjson } from '../api';
import { ErrorNotice } from '../notices';

/** A record of the /api/pull and /api/create streams (reference/ollama-api.md §3.9, §3.13). */
interface Progress {
  status?: string;
  digest?: string;
  total?: number;
  completed?: number;
}

/** GET /api/show's answer, the parts shown. */
interface ShowResponse {
  modelfile?: string;
  parameters?: string;
  template?: string;
  license?: string;
  capabilities?: string[];
  details?: ModelEntry['details'];
}

interface Layer {
  digest: string;
  total: number;
  completed: number;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** One model's /api/show: template, parameters, license, Modelfile. */
function Details({ name, show }: { name: string; show: ShowResponse }) {
  const parts: [string, string | undefined][] = [
    ['Parameters', show.parameters],
    ['Template', show.template],
    ['License', show.license],
    ['Modelfile', show.modelfile],
  ];
  return (
    <section class="details" aria-label={`Details of ${name}`}>
      <h3>{name}</h3>
      {parts.map(([title, text]) =>
        text ? (
          <details key={title} open={title === 'Parameters'}>
            <summary>{title}</summary>
            <pre>{text}</pre>
          </details>
        ) : null,
      )}
    </section>
  );
}

/** Models: the list, details, pull with a progress bar per layer, copy, delete, create from a Modelfile. */
export function ModelsPage() {
  const [models, setModels] = useState<ModelEntry[]>([]);
  const [shows, setShows] = useState<Record<string, ShowResponse>>({});
  const [selected, setSelected] = useState('');
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [pullName, setPullName] = useState('');
  const [insecure, setInsecure] = useState(false);
  const [layers, setLayers] = useState<Layer[]>([]);
  const [busy, setBusy] = useState(false);
  const [copyFrom, setCopyFrom] = useState('');
  const [copyTo, setCopyTo] = useState('');
  const [createName, setCreateName] = useState('');
  const [modelfile, setModelfile] = useState('');

  const refresh = async () => {
    try {
      const list = await listModels();
      setModels(list);
      const entries = await Promise.all(
        list.map(async (m) => [m.name, await json<ShowResponse>('/api/show', 'POST', { model: m.name })] as const),
      );
      setShows(Object.fromEntries(entries));
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => void refresh(), []);

  const act = async (what: string, action: () => Promise<void>) => {
    setBusy(true);
    setError('');
    setStatus(`${what}…`);
    try {
      await action();
      setStatus(`${what}: success`);
    } catch (e) {
      setStatus('');
      setError(`${what} failed: ${errorText(e)}`);
    } finally {
      setBusy(false);
      await refresh();
    }
  };

  const pull = (event: Event) => {
    event.preventDefault();
    setLayers([]);
    void act(`Pull ${pullName}`, async () => {
      const byDigest = new Map<string, Layer>();
      await streamNdjson<Progress>('/api/pull', { model: pullName, insecure }, (p) => {
        if (p.status) setStatus(p.status);
        if (p.digest && p.total) {
          byDigest.set(p.digest, { digest: p.digest, total: p.total, completed: p.completed ?? 0 });
          setLayers([...byDigest.values()]);
        }
      });
    });
  };

  const copy = (event: Event) => {
    event.preventDefault();
    void act(`Copy ${copyFrom} to ${copyTo}`, async () => {
      await json('/api/copy', 'POST', { source: copyFrom, destination: copyTo });
    });
  };

  const remove = (name: string) => {
    if (!confirm(`Delete the model ${name}? Its files are removed unless another model uses them.`)) return;
    void act(`Delete ${name}`, async () => {
      await json('/api/delete', 'DELETE', { model: name });
      if (selected === name) setSelected('');
    });
  };

  const create = (event: Event) => {
    event.preventDefault();
    void act(`Create ${createName}`, async () => {
      await streamNdjson<Progress>('/api/create', { model: createName, modelfile }, (p) => {
        if (p.status) setStatus(p.status);
      });
    });
  };

  return (
    <main class="models">
      <h1>Models</h1>
      <ErrorNotice error={error} />
      <p role="status" class="status">
        {status}
      </p>
      <table>
        <caption class="visually-hidden">Local models</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Size</th>
            <th scope="col">Family</th>
            <th scope="col">Parameters</th>
            <th scope="col">Quantization</th>
            <th scope="col">Capabilities</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {models.map((m) => (
            <tr key={m.name}>
              <th scope="row">{m.name}</th>
              <td>{formatBytes(m.size)}</td>
              <td>{m.details.family ?? ''}</td>
              <td>{m.details.parameter_size ?? ''}</td>
              <td>{m.details.quantization_level ?? ''}</td>
              <td>{(shows[m.name]?.capabilities ?? m.capabilities ?? []).join(', ')}</td>
              <td class="actions">
                <button type="button" onClick={() => setSelected(selected === m.name ? '' : m.name)}>
                  {selected === m.name ? 'Hide' : 'Details'}
                  <span class="visually-hidden"> of {m.name}</span>
                </button>
                <button type="button" class="danger" disabled={busy} onClick={() => remove(m.name)}>
                  Delete<span class="visually-hidden"> {m.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {models.length === 0 && <p>No models yet: pull or create one.</p>}
      {selected !== '' && shows[selected] && <Details name={selected} show={shows[selected]} />}

      <form class="card" onSubmit={pull} aria-labelledby="pull-title">
        <h2 id="pull-title">Pull a model</h2>
        <label for="pull-name">Name</label>
        <input
          id="pull-name"
          value={pullName}
          placeholder="llama3.2 or host:port/namespace/model:tag"
          onInput={(e) => setPullName(e.currentTarget.value)}
          required
        />
        <div class="check">
          <input
            id="pull-insecure"
            type="checkbox"
            checked={insecure}
            onChange={(e) => setInsecure(e.currentTarget.checked)}
          />
          <label for="pull-insecure">Insecure (plain HTTP registry)</label>
        </div>
        <button type="submit" disabled={busy}>
          Pull
        </button>
        <ul class="layers" aria-label="Layers">
          {layers.map((l) => {
            const percent = Math.floor((100 * l.completed) / l.total);
            return (
              <li key={l.digest}>
                <label for={`layer-${l.digest}`}>
                  {l.digest.slice(7, 19)} · {formatBytes(l.total)}
                </label>
                <progress id={`layer-${l.digest}`} max={l.total} value={l.completed} data-percent={percent} />
                <span class="percent">{percent} %</span>
              </li>
            );
          })}
        </ul>
      </form>

      <form class="card" onSubmit={copy} aria-labelledby="copy-title">
        <h2 id="copy-title">Copy a model</h2>
        <label for="copy-from">Source</label>
        <select id="copy-from" value={copyFrom} onChange={(e) => setCopyFrom(e.currentTarget.value)} required>
          <option value="">(choose)</option>
          {models.map((m) => (
            <option key={m.name} value={m.name}>
              {m.name}
            </option>
          ))}
        </select>
        <label for="copy-to">Destination</label>
        <input id="copy-to" value={copyTo} onInput={(e) => setCopyTo(e.currentTarget.value)} required />
        <button type="submit" disabled={busy}>
          Copy
        </button>
      </form>

      <form class="card" onSubmit={create} aria-labelledby="create-title">
        <h2 id="create-title">Create from a Modelfile</h2>
        <label for="create-name">Name</label>
        <input id="create-name" value={createName} onInput={(e) => setCreateName(e.currentTarget.value)} required />
        <label for="create-modelfile">Modelfile</label>
        <textarea
          id="create-modelfile"
          rows={6}
          placeholder={'FROM llama3.2\nPARAMETER temperature 0.7\nSYSTEM You are terse.'}
          value={modelfile}
          onInput={(e) => setModelfile(e.currentTarget.value)}
          required
        />
        <button type="submit" disabled={busy}>
          Create
        </button>
      </form>
    </main>
  );
}
