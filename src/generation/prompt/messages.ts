import { ResolvedModel } from '../../models';
import { ChatCommand, ChatMessage, GenerateCommand } from '../generation.types';

/**
 * The messages a template renders (reference/ollama-api.md §3.2, §3.3 step 6): the request's, with the Modelfile's
 * MESSAGE history and SYSTEM put where Ollama puts them.
 */

/**
 * Strips `<think>…</think>` blocks from assistant messages before the last user message (§3.3 step 6, applied to
 * every thinking-capable model whose tags are `<think>`/`</think>`).
 */
export function stripEarlierThinking(messages: ChatMessage[]): ChatMessage[] {
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  return messages.map((m, i) =>
    m.role === 'assistant' && i < lastUser && m.content.includes('</think>')
      ? { ...m, content: m.content.replace(/<think>[\s\S]*?<\/think>\s*/g, '') }
      : m,
  );
}

/**
 * Messages of a chat request for the template: the Modelfile MESSAGE history first, then the request's; the
 * Modelfile SYSTEM in front when the conversation does not start with a system message (§3.3 step 6); for
 * thinking-capable models, `<think>…</think>` is stripped from assistant messages before the last user message.
 * Returns a new array (the caller may drop messages from it).
 */
export function assembleChatMessages(cmd: ChatCommand, model: ResolvedModel): ChatMessage[] {
  let messages: ChatMessage[] = [...model.messages.map((m) => ({ role: m.role, content: m.content })), ...cmd.messages];
  if (model.system && messages[0]?.role !== 'system') messages.unshift({ role: 'system', content: model.system });
  if (model.capabilities.includes('thinking')) messages = stripEarlierThinking(messages);
  return messages;
}

/**
 * Messages of a generate request that is rendered with a template (§3.2): `[system?, …Modelfile MESSAGEs (unless
 * the deprecated `context` is given), user: prompt (+images, +audio)]`; the request's `system` wins over the Modelfile's.
 */
export function generateMessages(cmd: GenerateCommand, model: ResolvedModel): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const system = cmd.system ?? model.system;
  if (system) messages.push({ role: 'system', content: system });
  if (!cmd.context) messages.push(...model.messages.map((m) => ({ role: m.role, content: m.content })));
  messages.push({
    role: 'user',
    content: cmd.prompt,
    ...(cmd.images && cmd.images.length > 0 ? { images: cmd.images } : {}),
    ...(cmd.audio && cmd.audio.length > 0 ? { audio: cmd.audio } : {}),
  });
  return messages;
}
