import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPTION_TABLE } from '../../src/common/options';
import { EXTREME_VALUES } from '../utils/extreme-values';
import { ensureTestModels, TINY_BERT, TINY_LLAMA_SPM } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const TERMINATED = /llama runner process has terminated/;
/** Records read from a stream before it is abandoned (num_predict 2^31 with a context shift never ends on its own). */
const MAX_RECORDS = 6;
/** A bound for one request, against a hang (not a speed assertion). */
const REQUEST_TIMEOUT_MS = 120_000;

interface Outcome {
  status: number;
  /** The error body of a non-200, or the first `error` record of a 200 stream. */
  error?: string;
  records: number;
}

/**
 * POSTs `body` (a streaming request) and reads at most MAX_RECORDS NDJSON / SSE records, then abandons the stream.
 * @returns the status, the error text if any (body of a non-200 answer, or an error record in the stream).
 */
async function send(url: string, body: unknown): Promise<Outcome> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
  try {
    const res = await postJson(url, body, { signal: abort.signal });
    if (res.status !== 200) return { status: res.status, error: await res.text(), records: 0 };
    const decoder = new TextDecoder();
    let buffer = '';
    let records = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer
          .slice(0, nl)
          .trim()
          .replace(/^data: /, '');
        buffer = buffer.slice(nl + 1);
        if (line === '' || line.startsWith('event:') || line === '[DONE]') continue;
        records++;
        const record = JSON.parse(line) as { error?: unknown; done?: boolean; type?: string };
        if (record.error !== undefined || record.type === 'error') {
          return { status: 200, error: JSON.stringify(record), records };
        }
        if (record.done === true || records >= MAX_RECORDS) return { status: 200, records };
      }
    }
    return { status: 200, records };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** Fails unless `outcome` is a 200 without an error record or a 4xx, and never a runner termination. */
function assertSurvived(outcome: Outcome, what: string): void {
  assert.doesNotMatch(outcome.error ?? '', TERMINATED, what);
  if (outcome.status === 200) {
    assert.equal(outcome.error, undefined, `${what}: an error in a 200 stream`);
  } else {
    assert.ok(outcome.status >= 400 && outcome.status < 500, `${what}: ${outcome.status} ${outcome.error ?? ''}`);
  }
}

// Issue 32 item 3: no option value crashes a runner. Every option of OPTION_TABLE (so a new option is fuzzed without
// touching this file) × every extreme value goes to /api/generate on a real daemon with runner processes (4 slots
// sharing the cache: the production default, where `num_batch: 0` was `GGML_ASSERT(n_outputs_max <= …)`), as a
// request option and as Modelfile PARAMETERs; then the /v1 and Anthropic fields that become options.
describe('option fuzz: no value of any option terminates a runner', { skip: addon.skip }, () => {
  let t: TestApp;
  const generate = (options: Record<string, unknown>, model = 'fuzz') =>
    send(`${t.baseUrl}/api/generate`, { model, prompt: 'Once upon a time', options });

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { contextLength: 256 } });
    await createModel(t.baseUrl, 'fuzz', `FROM ${TINY_LLAMA_SPM}\n`);
    await createModel(t.baseUrl, 'fuzz-embed', `FROM ${TINY_BERT}\n`);
  });
  after(async () => {
    await t?.close();
  });

  // Load options change the runner (a reload each): the numeric extremes go to all of them at once (one load per
  // value); every other (option, value) pair is sent on its own.
  it('load options: every numeric extreme to all of them at once, every other value to each alone', async () => {
    const load = Object.keys(OPTION_TABLE).filter((k) => OPTION_TABLE[k].scope === 'load');
    const numericLoad = load.filter((k) => OPTION_TABLE[k].kind === 'int' || OPTION_TABLE[k].kind === 'float');
    for (const value of EXTREME_VALUES.filter((v) => typeof v === 'number')) {
      const options = { num_predict: 2, ...Object.fromEntries(numericLoad.map((k) => [k, value])) };
      assertSurvived(await generate(options), `${numericLoad.join(', ')} = ${value}`);
    }
    for (const key of load) {
      for (const value of EXTREME_VALUES.filter((v) => !(typeof v === 'number' && numericLoad.includes(key)))) {
        assertSurvived(await generate({ num_predict: 2, [key]: value }), `options.${key} = ${JSON.stringify(value)}`);
      }
    }
  });

  // Embedding contexts size their batch from num_ctx/num_batch too (a BERT model's own context; a generation model's
  // extra one): num_ctx 4 or 96 asserted there.
  it('load options on /api/embed: an embedding model and a generation model, every numeric extreme', async () => {
    const numericLoad = Object.keys(OPTION_TABLE).filter(
      (k) => OPTION_TABLE[k].scope === 'load' && (OPTION_TABLE[k].kind === 'int' || OPTION_TABLE[k].kind === 'float'),
    );
    for (const model of ['fuzz-embed', 'fuzz']) {
      for (const value of [...EXTREME_VALUES.filter((v) => typeof v === 'number'), 96]) {
        const options = Object.fromEntries(numericLoad.map((k) => [k, value]));
        const res = await postJson(`${t.baseUrl}/api/embed`, { model, input: ['hi there', 'a b c d e f'], options });
        assertSurvived(
          { status: res.status, error: res.status === 200 ? undefined : await res.text(), records: 0 },
          `/api/embed ${model} ${numericLoad.join(', ')} = ${value}`,
        );
      }
      await postJson(`${t.baseUrl}/api/generate`, { model, keep_alive: 0 });
    }
  });

  // Sampling options need no reload: each (option, value) pair alone.
  for (const key of Object.keys(OPTION_TABLE).filter((k) => OPTION_TABLE[k].scope === 'request')) {
    it(`options.${key}: 200 or 4xx for every extreme value`, async () => {
      for (const value of EXTREME_VALUES) {
        // A short answer, unless num_predict is the option under test (then the stream is abandoned early).
        const options = key === 'num_predict' ? { [key]: value } : { num_predict: 2, [key]: value };
        assertSurvived(await generate(options), `options.${key} = ${JSON.stringify(value)}`);
      }
    });
  }

  it('a wrong JSON type is a 400 naming the option (a request’s Modelfile-only rpc is ignored)', async () => {
    for (const [key, spec] of Object.entries(OPTION_TABLE)) {
      const outcome = await generate({ num_predict: 1, [key]: 'abc' });
      if (spec.modelfileOnly) {
        assertSurvived(outcome, key);
        continue;
      }
      assert.equal(outcome.status, 400, key);
      assert.match(outcome.error ?? '', new RegExp(`option \\\\"${key}\\\\" must be of`));
    }
  });

  it('Modelfile PARAMETERs: every numeric option at an extreme in one model, created (or refused) and served', async () => {
    const numeric = Object.entries(OPTION_TABLE).filter(([, s]) => s.kind === 'int' || s.kind === 'float');
    for (const [i, text] of ['0', '-1', '2147483648', '-2147483648', '1e308'].entries()) {
      const modelfile = `FROM ${TINY_LLAMA_SPM}\n${numeric.map(([k]) => `PARAMETER ${k} ${text}`).join('\n')}\n`;
      const res = await postJson(`${t.baseUrl}/api/create`, { model: `fuzz-p${i}`, modelfile, stream: false });
      if (!/^[+-]?\d+$/.test(text)) {
        // Not an integer: the int options refuse it as Ollama's FormatParams does.
        assert.equal(res.status, 400, `PARAMETER … ${text}`);
        assert.match(await res.text(), /invalid int value \[1e308\]/);
        continue;
      }
      assert.equal(res.status, 200, `PARAMETER … ${text}: ${await res.clone().text()}`);
      // num_predict of the model is the extreme too: the stream is abandoned after a few records.
      assertSurvived(await generate({}, `fuzz-p${i}`), `PARAMETER … ${text}`);
      await postJson(`${t.baseUrl}/api/generate`, { model: `fuzz-p${i}`, keep_alive: 0 });
    }
  });

  it('OpenAI and Anthropic fields that become options', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    // A negative value leaves the token limit at 4: penalties of -1e308 make greedy decoding repeat a token that
    // renders as nothing, so an unbounded answer would stream nothing for 10 × num_ctx tokens (slow, not a crash).
    for (const value of [0, 1, 2 ** 31, 2 ** 53, 1e308, -1e308, -(2 ** 31)]) {
      const openai = await send(`${t.baseUrl}/v1/chat/completions`, {
        model: 'fuzz',
        messages,
        stream: true,
        max_tokens: value > 0 ? value : 4,
        temperature: value,
        top_p: value,
        seed: value,
        frequency_penalty: value,
        presence_penalty: value,
      });
      assertSurvived(openai, `/v1/chat/completions ${value}`);
      const completions = await send(`${t.baseUrl}/v1/completions`, {
        model: 'fuzz',
        prompt: 'hi',
        stream: true,
        max_tokens: value > 0 ? value : 4,
        temperature: value,
        top_p: value,
        seed: value,
      });
      assertSurvived(completions, `/v1/completions ${value}`);
      const anthropic = await send(`${t.baseUrl}/v1/messages`, {
        model: 'fuzz',
        messages,
        stream: true,
        max_tokens: value > 0 ? value : 1,
        temperature: value,
        top_p: value,
        top_k: value,
      });
      assertSurvived(anthropic, `/v1/messages ${value}`);
    }
  });

  it('afterwards: the daemon serves, no runner crashed', async () => {
    assert.equal((await fetch(`${t.baseUrl}/api/version`)).status, 200);
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'fuzz',
      prompt: 'hi',
      stream: false,
      options: { num_predict: 3 },
    });
    assert.equal(res.status, 200, await res.clone().text());
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    assert.doesNotMatch(metrics, /^llamad_runner_crashes_total\{[^}]*\} [1-9]/m);
  });
});
