import { useEffect, useRef, useState } from 'preact/hooks';
import { listModels, ModelEntry, streamNdjson } from '../api';
import {
  Conversation,
  deleteConversation,
  exportJson,
  listConversations,
  Message,
  newConversation,
  parseImport,
  saveConversation,
  ToolCall,
} from '../conversations';
import { markdownCostMs } from '../markdown';
import { chatRequest, MessageView, readImage, SettingsView } from './chat-parts';
import { ErrorNotice } from '../notices';

/** Most often the page re-renders a streaming answer, ms. */
const RENDER_INTERVAL_MS = 100;
/** A re-render of the streaming answer waits at least this many times what the last Markdown render took. */
const RENDER_COST_FACTOR = 4;

/** A streamed /api/chat record (reference/ollama-api.md §3.3). */
interface ChatRecord {
  message?: { content?: string; thinking?: string; tool_calls?: ToolCall[] };
  done?: boolean;
  done_reason?: string;
  eval_count?: number;
  eval_duration?: number;
  prompt_eval_count?: number;
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Chat: conversations (IndexedDB), a model picker, streaming answers with Stop, images, settings. */
export function ChatPage() {
  const [models, setModels] = useState<ModelEntry[]>([]);
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [current, setCurrent] = useState<Conversation>(() => newConversation(''));
  const [draft, setDraft] = useState('');
  const [images, setImages] = useState<string[]>([]);
  const [streaming, setStreaming] = useState(false);
  const messagesRef = useRef<HTMLDivElement>(null);
  // The answer being written stays in view: the message list scrolls inside its own box (the composer with Stop
  // keeps its place) and follows the stream to its end.
  useEffect(() => {
    const box = messagesRef.current;
    if (streaming && box) box.scrollTop = box.scrollHeight;
  });
  const [error, setError] = useState('');
  const [renaming, setRenaming] = useState(false);
  const abort = useRef<AbortController | null>(null);

  useEffect(() => {
    listModels()
      .then((list) => {
        setModels(list);
        setCurrent((c) => (c.model === '' && list.length > 0 ? { ...c, model: list[0].name } : c));
      })
      .catch((e: unknown) => setError(String(e)));
    listConversations()
      .then(setConversations)
      .catch((e: unknown) => setError(String(e)));
    return () => abort.current?.abort();
  }, []);

  const persist = async (conversation: Conversation) => {
    if (conversation.messages.length === 0) return;
    await saveConversation(conversation);
    setConversations(await listConversations());
  };

  const send = async (event?: Event) => {
    event?.preventDefault();
    if (streaming || current.model === '' || (draft.trim() === '' && images.length === 0)) return;
    const user: Message = { role: 'user', content: draft, ...(images.length > 0 ? { images } : {}) };
    const title = current.messages.length === 0 ? draft.slice(0, 40) || 'Image' : current.title;
    const history = [...current.messages, user];
    const answer: Message = { role: 'assistant', content: '' };
    let conversation: Conversation = { ...current, title, messages: [...history, answer], updated: Date.now() };
    setCurrent(conversation);
    setDraft('');
    setImages([]);
    setError('');
    setStreaming(true);
    const controller = new AbortController();
    abort.current = controller;
    // Records are folded into `answer` as they come; the page re-renders (Markdown of the whole answer so far) at most
    // every RENDER_INTERVAL_MS, and never sooner than RENDER_COST_FACTOR × the last render's time after it, so that a
    // fast model's long stream cannot keep the page's main thread busy (Stop and the rest of the page stay
    // responsive); at once for the last record.
    let pending: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      if (pending !== undefined) clearTimeout(pending);
      pending = undefined;
      conversation = { ...conversation, messages: [...history, { ...answer }] };
      setCurrent(conversation);
    };
    const update = (change: Partial<Message>, now = false) => {
      Object.assign(answer, change);
      if (now) flush();
      else pending ??= setTimeout(flush, Math.max(RENDER_INTERVAL_MS, RENDER_COST_FACTOR * markdownCostMs()));
    };
    try {
      await streamNdjson<ChatRecord>(
        '/api/chat',
        chatRequest(current.model, current.settings, history),
        (record) => {
          const m = record.message ?? {};
          const change: Partial<Message> = {};
          if (m.content) change.content = answer.content + m.content;
          if (m.thinking) change.thinking = (answer.thinking ?? '') + m.thinking;
          if (m.tool_calls) change.tool_calls = [...(answer.tool_calls ?? []), ...m.tool_calls];
          if (record.done) {
            const seconds = (record.eval_duration ?? 0) / 1e9;
            change.stats = {
              eval_count: record.eval_count ?? 0,
              prompt_eval_count: record.prompt_eval_count ?? 0,
              tokens_per_second: seconds > 0 ? (record.eval_count ?? 0) / seconds : 0,
              ...(record.done_reason ? { done_reason: record.done_reason } : {}),
            };
          }
          update(change, record.done === true);
        },
        controller.signal,
      );
    } catch (e) {
      if (controller.signal.aborted) update({ stats: undefined, content: `${answer.content}\n\n*(stopped)*` }, true);
      else setError(e instanceof Error ? e.message : String(e));
    } finally {
      if (pending !== undefined) flush();
      abort.current = null;
      setStreaming(false);
      await persist(conversation).catch((e: unknown) => setError(String(e)));
    }
  };

  const attach = async (files: Iterable<File>) => {
    const added: string[] = [];
    for (const file of files) if (file.type.startsWith('image/')) added.push(await readImage(file));
    if (added.length > 0) setImages((list) => [...list, ...added]);
  };

  const onPaste = (event: ClipboardEvent) => {
    const files = [...(event.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
    if (files.length > 0) {
      event.preventDefault();
      void attach(files);
    }
  };

  const importFile = async (file: File) => {
    try {
      for (const conversation of parseImport(await file.text())) await saveConversation(conversation);
      setConversations(await listConversations());
    } catch (e) {
      setError(`import failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  const remove = async (conversation: Conversation) => {
    if (!confirm(`Delete the conversation "${conversation.title}"?`)) return;
    await deleteConversation(conversation.id);
    setConversations(await listConversations());
    if (conversation.id === current.id) setCurrent(newConversation(current.model, current.settings));
  };

  return (
    <main class="chat">
      <aside aria-label="Conversations">
        <button type="button" onClick={() => setCurrent(newConversation(current.model, current.settings))}>
          New chat
        </button>
        <ul>
          {conversations.map((c) => (
            <li key={c.id}>
              <button
                type="button"
                class="link"
                aria-current={c.id === current.id ? 'true' : undefined}
                onClick={() => !streaming && setCurrent(c)}
              >
                {c.title}
              </button>
              <button type="button" class="icon" aria-label={`Delete ${c.title}`} onClick={() => void remove(c)}>
                ×
              </button>
            </li>
          ))}
        </ul>
        <div class="row">
          <button type="button" onClick={() => download('llamad-conversations.json', exportJson(conversations))}>
            Export
          </button>
          <label class="button">
            Import
            <input
              type="file"
              accept="application/json,.json"
              class="visually-hidden"
              onChange={(e) => {
                const file = e.currentTarget.files?.[0];
                if (file) void importFile(file);
                e.currentTarget.value = '';
              }}
            />
          </label>
        </div>
      </aside>
      <section class="conversation" aria-label="Conversation">
        <div class="toolbar">
          <label for="model-picker">Model</label>
          <select
            id="model-picker"
            value={current.model}
            onChange={(e) => setCurrent({ ...current, model: e.currentTarget.value })}
          >
            {models.length === 0 && <option value="">(no models)</option>}
            {models.map((m) => (
              <option key={m.name} value={m.name}>
                {m.name}
              </option>
            ))}
          </select>
          {renaming ? (
            <form
              class="rename"
              onSubmit={(e) => {
                e.preventDefault();
                setRenaming(false);
                void persist({ ...current, updated: Date.now() });
              }}
            >
              <label for="rename-input">Title</label>
              <input
                id="rename-input"
                value={current.title}
                onInput={(e) => setCurrent({ ...current, title: e.currentTarget.value })}
              />
              <button type="submit">Save</button>
            </form>
          ) : (
            <button type="button" onClick={() => setRenaming(true)} disabled={current.messages.length === 0}>
              Rename
            </button>
          )}
        </div>
        <SettingsView settings={current.settings} onChange={(settings) => setCurrent({ ...current, settings })} />
        <div class="messages" role="log" aria-live="polite" aria-label="Messages" ref={messagesRef}>
          {current.messages.map((m, i) => (
            <MessageView key={i} message={m} streaming={streaming && i === current.messages.length - 1} />
          ))}
        </div>
        <ErrorNotice error={error} />
        <form class="composer" onSubmit={(e) => void send(e)}>
          {images.length > 0 && (
            <div class="images pending">
              {images.map((image, i) => (
                <button
                  type="button"
                  key={i}
                  class="thumb"
                  aria-label={`Remove image ${i + 1}`}
                  onClick={() => setImages(images.filter((_, j) => j !== i))}
                >
                  <img src={`data:image/*;base64,${image}`} alt="" />
                </button>
              ))}
            </div>
          )}
          <label for="prompt" class="visually-hidden">
            Message
          </label>
          <textarea
            id="prompt"
            rows={3}
            placeholder="Send a message (Enter sends, Shift+Enter a new line; paste an image to attach it)"
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
            onPaste={onPaste}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) void send(e);
            }}
          />
          <div class="row">
            <label class="button">
              Attach image
              <input
                type="file"
                accept="image/*"
                multiple
                class="visually-hidden"
                onChange={(e) => {
                  void attach([...(e.currentTarget.files ?? [])]);
                  e.currentTarget.value = '';
                }}
              />
            </label>
            {streaming ? (
              <button type="button" class="danger" onClick={() => abort.current?.abort()}>
                Stop
              </button>
            ) : (
              <button type="submit" disabled={current.model === ''}>
                Send
              </button>
            )}
          </div>
        </form>
      </section>
    </main>
  );
}
