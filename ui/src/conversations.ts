/**
 * Conversations kept in this browser (IndexedDB database `llamad-ui`, store `conversations`), exported and imported
 * as JSON (docs/ui.md "Chat"). Nothing here leaves the browser.
 */

/** A tool call as /api/chat streams it (reference/ollama-api.md §3.3). */
export interface ToolCall {
  function: { name: string; arguments: Record<string, unknown> };
}

/** One message of a conversation, in /api/chat's shape plus the answer's statistics. */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  thinking?: string;
  images?: string[];
  tool_calls?: ToolCall[];
  tool_name?: string;
  /** From the `done` record: tokens generated and the rate, tokens/s. */
  stats?: { eval_count: number; prompt_eval_count: number; tokens_per_second: number; done_reason?: string };
}

/** Options of a chat request (the `options` of /api/chat, and `think`). */
export interface ChatSettings {
  system: string;
  temperature?: number;
  top_p?: number;
  num_ctx?: number;
  num_predict?: number;
  seed?: number;
  think: boolean;
}

/** A stored conversation. */
export interface Conversation {
  id: string;
  title: string;
  model: string;
  settings: ChatSettings;
  messages: Message[];
  updated: number;
}

const DB_NAME = 'llamad-ui';
const STORE = 'conversations';

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: 'id' });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB unavailable'));
  });
}

async function run<T>(mode: IDBTransactionMode, action: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await open();
  try {
    return await new Promise<T>((resolve, reject) => {
      const request = action(db.transaction(STORE, mode).objectStore(STORE));
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error ?? new Error('IndexedDB request failed'));
    });
  } finally {
    db.close();
  }
}

/** Every stored conversation, most recently updated first. */
export async function listConversations(): Promise<Conversation[]> {
  const all = await run<Conversation[]>('readonly', (s) => s.getAll() as IDBRequest<Conversation[]>);
  return all.sort((a, b) => b.updated - a.updated);
}

/** Stores (or replaces) a conversation. */
export async function saveConversation(conversation: Conversation): Promise<void> {
  await run('readwrite', (s) => s.put(conversation));
}

/** Removes a conversation. */
export async function deleteConversation(id: string): Promise<void> {
  await run('readwrite', (s) => s.delete(id));
}

/** A new empty conversation. */
export function newConversation(model: string, settings?: ChatSettings): Conversation {
  return {
    id: crypto.randomUUID(),
    title: 'New chat',
    model,
    settings: settings ?? { system: '', think: false },
    messages: [],
    updated: Date.now(),
  };
}

/** The export format: `{ "llamad_conversations": 1, "conversations": [...] }`. */
export function exportJson(conversations: Conversation[]): string {
  return JSON.stringify({ llamad_conversations: 1, conversations }, null, 2);
}

/**
 * Parses an export (or a single conversation object) and returns the conversations in it, each with a fresh id so
 * that an import never overwrites. Throws on anything that is not an export.
 */
export function parseImport(text: string): Conversation[] {
  const data = JSON.parse(text) as { conversations?: unknown } | Conversation;
  const list = 'conversations' in data && Array.isArray(data.conversations) ? data.conversations : [data];
  return list.map((raw) => {
    const c = raw as Partial<Conversation>;
    if (!Array.isArray(c.messages)) throw new Error('not a conversation export: "messages" is missing');
    return {
      id: crypto.randomUUID(),
      title: typeof c.title === 'string' ? c.title : 'Imported chat',
      model: typeof c.model === 'string' ? c.model : '',
      settings: c.settings ?? { system: '', think: false },
      messages: c.messages,
      updated: Date.now(),
    };
  });
}
