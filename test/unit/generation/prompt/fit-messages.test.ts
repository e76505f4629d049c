import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestCancelledError } from '../../../../src/common/errors';
import { ChatMessage } from '../../../../src/generation/generation.types';
import { droppableCount, dropOldest, fewestDrops } from '../../../../src/generation/prompt/fit-messages';
import { mulberry32 } from '../../../utils/prng';

/** A conversation of `n` messages: some system messages anywhere, users and assistants of random lengths. */
function conversation(rand: () => number, n: number): ChatMessage[] {
  return Array.from({ length: n }, (_, i) => {
    const role = rand() < 0.1 ? 'system' : i % 2 === 0 ? 'user' : 'assistant';
    return { role, content: 'x'.repeat(Math.floor(rand() * 200)) } as ChatMessage;
  });
}

/** The "template + tokenizer": 3 tokens per message plus one per character, plus a fixed header. */
const tokenCount = (messages: ChatMessage[]) => 5 + messages.reduce((n, m) => n + 3 + m.content.length, 0);

/** The rule as Ollama's loop (and this daemon before issue 32) applied it: drop one at a time, re-render each time. */
function linear(messages: ChatMessage[], limit: number): ChatMessage[] {
  const kept = [...messages];
  while (tokenCount(kept) >= limit) {
    const drop = kept.findIndex((m, i) => m.role !== 'system' && i < kept.length - 1);
    if (drop < 0) break;
    kept.splice(drop, 1);
  }
  return kept;
}

/** The search over the same renders; counts the renders it asked for. */
async function searched(messages: ChatMessage[], limit: number): Promise<{ kept: ChatMessage[]; renders: number[] }> {
  const renders: number[] = [];
  const k = await fewestDrops(droppableCount(messages), (k) => {
    renders.push(k);
    return Promise.resolve(tokenCount(dropOldest(messages, k)) < limit);
  });
  return { kept: dropOldest(messages, k), renders };
}

describe('chat fitting: the fewest messages to drop, by binary search (§4.4)', () => {
  it('keeps the same messages as dropping one at a time, on many random conversations', async () => {
    for (let seed = 1; seed <= 400; seed++) {
      const rand = mulberry32(seed);
      const messages = conversation(rand, 1 + Math.floor(rand() * 60));
      const limit = Math.floor(rand() * tokenCount(messages) * 1.2) + 1;
      const { kept } = await searched(messages, limit);
      assert.deepEqual(kept, linear(messages, limit), `seed ${seed}`);
    }
  });

  it('renders O(log n) times, each count at most once', async () => {
    for (const n of [10, 100, 1000, 4000]) {
      const messages: ChatMessage[] = [
        { role: 'system', content: 'sys' },
        ...Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'abc' }) as ChatMessage),
      ];
      const { kept, renders } = await searched(messages, 200);
      assert.deepEqual(kept, linear(messages, 200));
      assert.ok(renders.length <= 2 + Math.ceil(Math.log2(n)), `${renders.length} renders for ${n} messages`);
      assert.equal(new Set(renders).size, renders.length, 'no count rendered twice');
    }
  });

  it('never drops system messages or the last message; drops all others when nothing fits', async () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'a'.repeat(50) },
      { role: 'system', content: 's'.repeat(50) },
      { role: 'assistant', content: 'b'.repeat(50) },
      { role: 'user', content: 'last'.repeat(50) },
    ];
    assert.equal(droppableCount(messages), 2);
    const { kept } = await searched(messages, 10);
    assert.deepEqual(
      kept.map((m) => m.role),
      ['system', 'user'],
    );
    assert.deepEqual(kept, linear(messages, 10));
  });

  it('stops before the next render once the signal fired', async () => {
    const abort = new AbortController();
    let calls = 0;
    await assert.rejects(
      fewestDrops(
        100,
        () => {
          calls++;
          abort.abort();
          return Promise.resolve(false);
        },
        abort.signal,
      ),
      RequestCancelledError,
    );
    assert.equal(calls, 1);
  });
});
