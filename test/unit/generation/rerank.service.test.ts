import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { notRerankerMessage, rankResults, rerankTokens } from '../../../src/generation/rerank.service';
import type { Runner, RunnerModelInfo } from '../../../src/runner';

/** A runner whose tokenizer maps each character to its code, with [100] / [102] as the specials it adds. */
function vocabRunner(info: Partial<RunnerModelInfo>): { runner: Runner; calls: unknown[] } {
  const calls: unknown[] = [];
  const runner = {
    info: { trainContext: 512, addBos: true, bos: 100, hasChatTemplate: false, ...info },
    tokenize: (text: string, options: { addSpecial: boolean; parseSpecial: boolean }) => {
      calls.push([text, options]);
      const ids = [...text].map((c) => c.charCodeAt(0));
      return Promise.resolve(options.addSpecial ? [100, ...ids, 102] : ids);
    },
  } as unknown as Runner;
  return { runner, calls };
}

describe('rerank (beyond Ollama)', () => {
  it('rankResults: best first, ties in document order, top_n cuts (0 or absent keeps all)', () => {
    const scores = [0.1, 0.9, 0.5, 0.9];
    assert.deepEqual(
      rankResults(scores).map((r) => r.index),
      [1, 3, 2, 0],
    );
    assert.deepEqual(rankResults(scores, 2), [
      { index: 1, relevanceScore: 0.9 },
      { index: 3, relevanceScore: 0.9 },
    ]);
    assert.equal(rankResults(scores, 0).length, 4);
    assert.equal(rankResults(scores, 10).length, 4);
    assert.deepEqual(rankResults([]), []);
  });

  it('rerankTokens: [BOS] query [EOS/SEP] as the vocabulary adds them, then the document (specials not parsed)', async () => {
    const { runner, calls } = vocabRunner({});
    assert.deepEqual(await rerankTokens(runner, 'q', 'd'), [100, 113, 102, 100]);
    assert.deepEqual(calls, [
      ['q', { addSpecial: true, parseSpecial: false }],
      ['d', { addSpecial: false, parseSpecial: false }],
    ]);
    // A vocabulary that adds EOS gets it after the document too (llama-server's format_prompt_rerank).
    const eos = vocabRunner({ addEos: true, eos: 2 });
    assert.deepEqual(await rerankTokens(eos.runner, 'q', 'd'), [100, 113, 102, 100, 2]);
  });

  it("rerankTokens: the GGUF's rerank template with {query} / {document} replaced, no added specials", async () => {
    const { runner, calls } = vocabRunner({ rerankTemplate: '<{query}|{document}>' });
    assert.deepEqual(
      await rerankTokens(runner, 'q', 'd'),
      [...'<q|d>'].map((c) => c.charCodeAt(0)),
    );
    assert.deepEqual(calls, [['<q|d>', { addSpecial: false, parseSpecial: true }]]);
  });

  it('names the model in the not-a-reranker message', () => {
    assert.match(notRerankerMessage('qwen'), /"qwen" is not a reranking model/);
  });
});
