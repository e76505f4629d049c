import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_BERT_RERANKER, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

interface RerankAnswer {
  model: string;
  object: string;
  results: { index: number; relevance_score: number; document?: { text: string } }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

// /api/rerank and /v1/rerank (beyond Ollama) with the REAL addon on tiny-bert-reranker (bert, pooling_type rank,
// random classifier head cls / cls.output): the scores mean nothing, so the test checks shape, order, top_n,
// return_documents, index mapping and determinism; tiny-qwen2 (not a reranker) is a 400.
describe('rerank with the real addon (beyond Ollama)', { skip: addon.skip }, () => {
  let t: TestApp;
  const post = async (path: string, body: unknown) => {
    const res = await postJson(`${t.baseUrl}${path}`, body);
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const documents = [
    'The giant panda is a bear native to China.',
    'Paris is the capital of France.',
    'hi',
    'Pandas eat bamboo almost exclusively, and they spend most of the day eating.',
  ];

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 2, contextLength: 512 } });
    for (const [model, path] of [
      ['rr', TINY_BERT_RERANKER],
      ['qwen', TINY_QWEN2],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200, model);
    }
  });

  after(() => t?.close());

  it('scores every document once, best first, with usage; deterministic; /v1/rerank answers the same', async () => {
    const res = await post('/api/rerank', { model: 'rr', query: 'what is a panda?', documents });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const a = res.body as RerankAnswer;
    assert.equal(a.model, 'rr');
    assert.equal(a.object, 'list');
    assert.deepEqual(a.results.map((r) => r.index).sort(), [0, 1, 2, 3]);
    for (let i = 1; i < a.results.length; i++) {
      assert.ok(a.results[i - 1].relevance_score >= a.results[i].relevance_score, 'sorted by score, best first');
    }
    assert.ok(a.results.every((r) => Number.isFinite(r.relevance_score) && r.document === undefined));
    assert.ok(a.usage.prompt_tokens > documents.length * 3);
    assert.equal(a.usage.total_tokens, a.usage.prompt_tokens);
    // The classifier sees each pair: the scores are not one value for all. (Not four distinct values: the random
    // classifier's scores lie within 2e-3 of each other, and on some CPUs its F16 arithmetic rounds two of them to
    // the same number.)
    assert.ok(new Set(a.results.map((r) => r.relevance_score)).size > 1, JSON.stringify(a.results));
    const again = (await post('/v1/rerank', { model: 'rr', query: 'what is a panda?', documents }))
      .body as RerankAnswer;
    assert.deepEqual(again.results, a.results, 'same scores on the other path and run');
    // Scoring each document alone gives its score from the batch (index mapping).
    for (const r of a.results) {
      const alone = (
        await post('/api/rerank', { model: 'rr', query: 'what is a panda?', documents: [documents[r.index]] })
      ).body as RerankAnswer;
      assert.equal(alone.results[0].index, 0);
      assert.ok(Math.abs(alone.results[0].relevance_score - r.relevance_score) < 1e-4, `document ${r.index}`);
    }
  });

  it('top_n cuts; return_documents adds document.text of the right index', async () => {
    const full = (await post('/api/rerank', { model: 'rr', query: 'panda', documents })).body as RerankAnswer;
    const res = await post('/api/rerank', { model: 'rr', query: 'panda', documents, top_n: 2, return_documents: true });
    assert.equal(res.status, 200);
    const a = res.body as RerankAnswer;
    assert.equal(a.results.length, 2);
    assert.deepEqual(
      a.results.map((r) => r.index),
      full.results.slice(0, 2).map((r) => r.index),
    );
    for (const r of a.results) assert.deepEqual(r.document, { text: documents[r.index] });
    const empty = (await post('/api/rerank', { model: 'rr', query: 'panda', documents: [] })).body as RerankAnswer;
    assert.deepEqual(empty.results, []);
  });

  it('a model that is not a reranker is a 400; unknown model 404; bad bodies 400', async () => {
    const chat = await post('/api/rerank', { model: 'qwen', query: 'q', documents: ['d'] });
    assert.equal(chat.status, 400);
    assert.match(JSON.stringify(chat.body), /not a reranking model/);
    const missing = await post('/v1/rerank', { model: 'nope', query: 'q', documents: ['d'] });
    assert.equal(missing.status, 404);
    // /v1 renders OpenAI's error object, /api Ollama's {"error": "..."}
    assert.equal(typeof (missing.body as { error: { message?: string } }).error.message, 'string');
    const notReranker = await post('/v1/rerank', { model: 'qwen', query: 'q', documents: ['d'] });
    assert.equal(notReranker.status, 400);
    assert.match((notReranker.body as { error: { message: string } }).error.message, /not a reranking model/);
    assert.equal((await post('/api/rerank', { model: 'rr', documents: ['d'] })).status, 400);
    assert.equal((await post('/api/rerank', { model: 'rr', query: 'q', documents: [1] })).status, 400);
    assert.equal((await post('/api/rerank', { model: 'rr', query: 'q', documents: ['d'], top_n: 'x' })).status, 400);
  });
});
