import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiKey, listModels, onUnauthorized, setApiKey } from './api';
import { ChatPage } from './pages/chat';
import { MetricsPage } from './pages/metrics';
import { ModelsPage } from './pages/models';
import { RunningPage } from './pages/running';
import { ErrorNotice } from './notices';

const PAGES = [
  { id: 'chat', label: 'Chat', Page: ChatPage },
  { id: 'models', label: 'Models', Page: ModelsPage },
  { id: 'running', label: 'Running', Page: RunningPage },
  { id: 'metrics', label: 'Metrics', Page: MetricsPage },
] as const;

type PageId = (typeof PAGES)[number]['id'];

function pageFromHash(): PageId {
  const id = location.hash.replace(/^#\/?/, '');
  return PAGES.find((p) => p.id === id)?.id ?? 'chat';
}

/** Asks for an API key (docs/security.md "Web UI"): kept in sessionStorage, sent as a bearer token. */
function Login({ onDone, refused }: { onDone: () => void; refused: boolean }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(refused ? 'The key was refused.' : '');
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setApiKey(key.trim());
    try {
      await listModels();
      onDone();
    } catch (e) {
      setApiKey('');
      setError(e instanceof ApiError && e.status === 401 ? 'The key was refused.' : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <h1>llamad</h1>
      <form onSubmit={(e) => void submit(e)} aria-labelledby="login-title">
        <h2 id="login-title">This server needs an API key</h2>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          required
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorNotice error={error} />
        <p class="hint">The key stays in this tab only (sessionStorage) and is sent as a bearer token.</p>
      </form>
    </main>
  );
}

/** The page: a tab bar and the current page; the login form while the server refuses the (missing) key. */
export function App() {
  const [page, setPage] = useState<PageId>(pageFromHash());
  const [auth, setAuth] = useState<'checking' | 'ok' | 'needed' | 'refused'>('checking');
  useEffect(() => {
    const onHash = () => setPage(pageFromHash());
    addEventListener('hashchange', onHash);
    const off = onUnauthorized(() => setAuth(apiKey() === '' ? 'needed' : 'refused'));
    listModels()
      .then(() => setAuth('ok'))
      .catch((e: unknown) =>
        setAuth(e instanceof ApiError && e.status === 401 ? (apiKey() ? 'refused' : 'needed') : 'ok'),
      );
    return () => {
      removeEventListener('hashchange', onHash);
      off();
    };
  }, []);
  if (auth === 'checking') return <p class="loading">Loading…</p>;
  if (auth !== 'ok') return <Login refused={auth === 'refused'} onDone={() => setAuth('ok')} />;
  const current = PAGES.find((p) => p.id === page) ?? PAGES[0];
  return (
    <>
      <header>
        <span class="brand">llamad</span>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((p) => (
              <li key={p.id}>
                <a href={`#/${p.id}`} aria-current={p.id === page ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {apiKey() !== '' && (
          <button
            type="button"
            class="link"
            onClick={() => {
              setApiKey('');
              setAuth('needed');
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <current.Page />
    </>
  );
}
