import type { ChatSettings, Message } from '../conversations';
import { Markdown } from '../markdown';

/** One message: role, thinking (folded), text as Markdown, images, tool calls, and the answer's statistics. */
export function MessageView({ message, streaming }: { message: Message; streaming: boolean }) {
  const label =
    message.role === 'tool' ? `tool result${message.tool_name ? ` (${message.tool_name})` : ''}` : message.role;
  return (
    <article class={`message ${message.role}`} aria-label={`${label} message`}>
      <div class="role">{label}</div>
      {message.thinking && (
        <details class="thinking">
          <summary>Thinking</summary>
          <pre>{message.thinking}</pre>
        </details>
      )}
      {message.images && message.images.length > 0 && (
        <div class="images">
          {message.images.map((image, i) => (
            <img key={i} src={`data:image/*;base64,${image}`} alt={`attached image ${i + 1}`} />
          ))}
        </div>
      )}
      {message.role === 'user' || message.role === 'tool' ? (
        <pre class="plain">{message.content}</pre>
      ) : (
        <Markdown text={message.content} streaming={streaming} />
      )}
      {message.tool_calls?.map((call, i) => (
        <div key={i} class="tool-call" role="group" aria-label={`tool call ${call.function.name}`}>
          <span class="badge">tool call</span> <code>{call.function.name}</code>
          <pre>{JSON.stringify(call.function.arguments, null, 2)}</pre>
        </div>
      ))}
      {message.stats && (
        <p class="stats" data-testid="answer-stats">
          {message.stats.prompt_eval_count} prompt tokens · {message.stats.eval_count} tokens ·{' '}
          {message.stats.tokens_per_second.toFixed(1)} tokens/s
          {message.stats.done_reason ? ` · ${message.stats.done_reason}` : ''}
        </p>
      )}
    </article>
  );
}

function numberOrUndefined(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

const NUMERIC: { key: 'temperature' | 'top_p' | 'num_ctx' | 'num_predict' | 'seed'; label: string; step: string }[] = [
  { key: 'temperature', label: 'Temperature', step: '0.05' },
  { key: 'top_p', label: 'Top p', step: '0.05' },
  { key: 'num_ctx', label: 'Context (num_ctx)', step: '1' },
  { key: 'num_predict', label: 'Max tokens (num_predict)', step: '1' },
  { key: 'seed', label: 'Seed', step: '1' },
];

/** The system prompt and the common options of a conversation (empty = the model's default). */
export function SettingsView({ settings, onChange }: { settings: ChatSettings; onChange: (s: ChatSettings) => void }) {
  return (
    <details class="settings">
      <summary>Settings</summary>
      <label for="system-prompt">System prompt</label>
      <textarea
        id="system-prompt"
        rows={3}
        value={settings.system}
        onInput={(e) => onChange({ ...settings, system: e.currentTarget.value })}
      />
      <div class="grid">
        {NUMERIC.map(({ key, label, step }) => (
          <div key={key}>
            <label for={`opt-${key}`}>{label}</label>
            <input
              id={`opt-${key}`}
              type="number"
              step={step}
              placeholder="default"
              value={settings[key] ?? ''}
              onInput={(e) => onChange({ ...settings, [key]: numberOrUndefined(e.currentTarget.value) })}
            />
          </div>
        ))}
        <div class="check">
          <input
            id="opt-think"
            type="checkbox"
            checked={settings.think}
            onChange={(e) => onChange({ ...settings, think: e.currentTarget.checked })}
          />
          <label for="opt-think">Think</label>
        </div>
      </div>
    </details>
  );
}

/** Reads an image file as base64 (no `data:` prefix), as /api/chat's `images` wants it. */
export function readImage(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error('cannot read the file'));
    reader.readAsDataURL(file);
  });
}

/** The request body of /api/chat for a conversation (reference/ollama-api.md §3.3). */
export function chatRequest(model: string, settings: ChatSettings, messages: Message[]): object {
  const options: Record<string, number> = {};
  for (const { key } of NUMERIC) {
    const value = settings[key];
    if (value !== undefined) options[key] = value;
  }
  const wire = messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.images && m.images.length > 0 ? { images: m.images } : {}),
    ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
    ...(m.tool_name ? { tool_name: m.tool_name } : {}),
  }));
  if (settings.system.trim() !== '') wire.unshift({ role: 'system', content: settings.system });
  return { model, messages: wire, stream: true, options, ...(settings.think ? { think: true } : {}) };
}
