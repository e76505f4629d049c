import { ChatMessage } from '../generation.types';
import { throwIfCancelled } from './grammar-budget';

/**
 * Which chat messages are kept when a conversation does not fit the slot (reference/ollama-api.md §4.4, Ollama's
 * chatPrompt): the oldest messages are dropped — never a system message, never the last message — until the rendered
 * prompt fits. Ollama (and this daemon until issue 32) tried one count after the other, re-rendering and
 * re-tokenizing the whole conversation each time: O(messages²) work, minutes for a few thousand messages. Here the
 * number of dropped messages is found by binary search: O(log n) renders.
 *
 * The rule: with D droppable messages, let fits(k) say whether the prompt with the k oldest droppable messages
 * dropped is shorter than the slot. The one-at-a-time loop keeps the smallest k with fits(k), or k = D (all dropped)
 * when none fits. The search returns the same k whenever fits is monotonic (once the prompt fits, dropping one more
 * message keeps it fitting), which holds when the token count does not grow as messages are dropped — true of every
 * chat template that renders each message on its own. When a template breaks that (e.g. it renders something extra
 * only for short conversations), the search still returns a k that fits (or D), not necessarily the smallest one.
 */

/** The number of droppable messages: not system, not the last message. */
export function droppableCount(messages: ChatMessage[]): number {
  let n = 0;
  messages.forEach((m, i) => {
    if (m.role !== 'system' && i < messages.length - 1) n++;
  });
  return n;
}

/** The messages with the `k` oldest droppable ones (not system, not the last) left out; a new array. */
export function dropOldest(messages: ChatMessage[], k: number): ChatMessage[] {
  let left = k;
  return messages.filter((m, i) => {
    if (left > 0 && m.role !== 'system' && i < messages.length - 1) {
      left--;
      return false;
    }
    return true;
  });
}

/**
 * The fewest of `count` droppable messages to drop so that the prompt fits: the smallest k in [0, count] with
 * `fits(k)`, or `count` when none fits (see the rule above). Calls fits(0), then fits(count), then a binary search
 * between them: at most 2 + ⌈log₂ count⌉ calls, each k at most once.
 * @param fits whether the prompt with the k oldest droppable messages dropped fits (renders and tokenizes it).
 * @param signal checked before every call of `fits`.
 * @throws RequestCancelledError when `signal` fired; whatever `fits` throws.
 */
export async function fewestDrops(
  count: number,
  fits: (k: number) => Promise<boolean>,
  signal?: AbortSignal,
): Promise<number> {
  const test = (k: number) => {
    throwIfCancelled(signal);
    return fits(k);
  };
  if (count <= 0 || (await test(0))) return 0;
  if (!(await test(count))) return count;
  // Invariant: fits(hi) holds, fits(lo - 1) does not.
  let lo = 1;
  let hi = count;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (await test(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
