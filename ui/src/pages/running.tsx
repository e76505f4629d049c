import { useEffect, useState } from 'preact/hooks';
import { formatBytes, json } from '../api';
import { ErrorNotice } from '../notices';

/** One model of GET /api/ps (reference/ollama-api.md §3.7, with llamad's `parallel` and `devices`). */
interface RunningModel {
  name: string;
  model: string;
  size: number;
  size_vram: number;
  expires_at: string;
  context_length: number;
  /** The runner process's id (beyond Ollama; absent for an in-process runner). */
  pid?: number;
  /** A model still loading (beyond Ollama), with its progress in [0, 1]. */
  loading?: boolean;
  load_progress?: number;
  parallel?: {
    slots: number;
    slots_busy: number;
    queued: number;
    kv_cells: number;
    kv_cells_used: number;
    ram_cache?: { entries: number; bytes: number };
  };
}

/** How long until `iso`, as `4m 10s`, or `forever` for keep-alive -1 (a far-future date). */
function untilText(iso: string): string {
  const ms = Date.parse(iso) - Date.now();
  if (!Number.isFinite(ms)) return iso;
  if (ms > 10 * 365 * 24 * 3600 * 1000) return 'forever';
  if (ms <= 0) return 'now';
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`;
}

/** Running: the loaded models (/api/ps, refreshed every 2 s) with an Unload button (keep_alive 0). */
export function RunningPage() {
  const [models, setModels] = useState<RunningModel[]>([]);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const refresh = async () => {
    try {
      setModels((await json<{ models?: RunningModel[] }>('/api/ps')).models ?? []);
      setError('');
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  useEffect(() => {
    void refresh();
    const timer = setInterval(() => void refresh(), 2000);
    return () => clearInterval(timer);
  }, []);

  const unload = async (name: string) => {
    setStatus(`Unloading ${name}…`);
    try {
      // Ollama's way to unload: a generate request without a prompt and keep_alive 0 (§3.1).
      await json('/api/generate', 'POST', { model: name, keep_alive: 0 });
      setStatus(`${name} unloaded`);
    } catch (e) {
      setStatus('');
      setError(e instanceof Error ? e.message : String(e));
    }
    await refresh();
  };

  const queued = models.reduce((sum, m) => sum + (m.parallel?.queued ?? 0), 0);
  return (
    <main class="running">
      <h1>Running models</h1>
      <ErrorNotice error={error} />
      <p role="status" class="status">
        {status}
      </p>
      <p>
        Requests queued for a slot: <strong data-testid="queued">{queued}</strong>
      </p>
      {models.length === 0 ? (
        <p>No model is loaded.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Loaded models</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Memory</th>
              <th scope="col">Context</th>
              <th scope="col">Slots busy</th>
              <th scope="col">KV cells used</th>
              <th scope="col">Prompt cache entries</th>
              <th scope="col">Expires in</th>
              <th scope="col">Runner pid</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {models.map((m) => (
              <tr key={m.name}>
                <th scope="row">{m.name}</th>
                <td>
                  {formatBytes(m.size)}
                  {m.size_vram > 0 ? ` (${formatBytes(m.size_vram)} on the GPU)` : ''}
                </td>
                <td>{m.context_length}</td>
                <td>{m.parallel ? `${m.parallel.slots_busy} / ${m.parallel.slots}` : ''}</td>
                <td>{m.parallel ? `${m.parallel.kv_cells_used} / ${m.parallel.kv_cells}` : ''}</td>
                <td>{m.parallel?.ram_cache ? m.parallel.ram_cache.entries : '—'}</td>
                <td>{m.loading ? `loading ${Math.round((m.load_progress ?? 0) * 100)} %` : untilText(m.expires_at)}</td>
                <td>{m.pid ?? '—'}</td>
                <td>
                  <button type="button" onClick={() => void unload(m.name)}>
                    Unload<span class="visually-hidden"> {m.name}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
