import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { humanNumber } from '../../../src/cli/commands';
import { goDuration, humanBytes, humanTime, metricsSummary, processor, table } from '../../../src/cli/format';
import { parseOllamaHost } from '../../../src/cli/host';
import { mergeCodexConfig } from '../../../src/cli/launch';
import { ProgressView, timeLeft } from '../../../src/cli/progress';
import { extractImages, parseParameter, parseThink, WordWrapper } from '../../../src/cli/run';

describe('cli formatting (Ollama format package)', () => {
  it('humanBytes', () => {
    assert.equal(humanBytes(0), '0 B');
    assert.equal(humanBytes(999), '999 B');
    assert.equal(humanBytes(1000), '1 KB');
    assert.equal(humanBytes(1500), '1.5 KB');
    assert.equal(humanBytes(45_000_000), '45 MB');
    assert.equal(humanBytes(4_661_211_424), '4.7 GB');
    assert.equal(humanBytes(123_456_789_012), '123 GB');
  });
  it('humanTime', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const ago = (ms: number) => humanTime(new Date(now - ms), 'Never', now);
    assert.equal(ago(500), 'Less than a second ago');
    assert.equal(ago(1000), '1 second ago');
    assert.equal(ago(30_000), '30 seconds ago');
    assert.equal(ago(90_000), 'About a minute ago');
    assert.equal(ago(5 * 60_000), '5 minutes ago');
    assert.equal(ago(3600_000), 'About an hour ago');
    assert.equal(ago(5 * 3600_000), '5 hours ago');
    assert.equal(ago(3 * 86400_000), '3 days ago');
    assert.equal(ago(20 * 86400_000), '2 weeks ago');
    assert.equal(ago(100 * 86400_000), '3 months ago');
    assert.equal(ago(3 * 365 * 86400_000), '3 years ago');
    assert.equal(ago(-4 * 60_000 - 500), '4 minutes from now');
    assert.equal(humanTime('2318-01-01T00:00:00Z', 'Never', now), 'Forever');
    assert.equal(humanTime('0001-01-01T00:00:00Z', 'Never', now), 'Never');
  });
  it('processor, humanNumber, table', () => {
    assert.equal(processor(100, 0), '100% CPU');
    assert.equal(processor(100, 100), '100% GPU');
    assert.equal(processor(100, 52), '48%/52% CPU/GPU');
    assert.equal(humanNumber(8_030_261_248), '8.0B');
    assert.equal(humanNumber(19_700_000), '19.70M'); // format.HumanNumber: two decimals for millions
    assert.equal(humanNumber(2_000_000), '2M');
    assert.equal(table(['A', 'BB'], [['xyz', '1']]), 'A      BB\nxyz    1\n');
  });
  it('goDuration and the --verbose summary', () => {
    assert.equal(goDuration(1_234_567_890), '1.23456789s');
    assert.equal(goDuration(12_500_000), '12.5ms');
    assert.equal(goDuration(1500), '1.5µs');
    assert.equal(goDuration(62_500_000_000), '1m2.5s');
    assert.equal(
      metricsSummary({
        total_duration: 2e9,
        prompt_eval_count: 10,
        prompt_eval_duration: 1e9,
        eval_count: 5,
        eval_duration: 5e8,
      }),
      'total duration:       2s\nprompt eval count:    10 token(s)\nprompt eval duration: 1s\n' +
        'prompt eval rate:     10.00 tokens/s\neval count:           5 token(s)\neval duration:        500ms\n' +
        'eval rate:            10.00 tokens/s\n',
    );
  });
});

describe('OLLAMA_HOST parsing (envconfig.Host)', () => {
  it('accepts host, host:port, scheme://host:port/path', () => {
    assert.equal(parseOllamaHost(undefined), 'http://127.0.0.1:11434');
    assert.equal(parseOllamaHost(''), 'http://127.0.0.1:11434');
    assert.equal(parseOllamaHost('example.com'), 'http://example.com:11434');
    assert.equal(parseOllamaHost('example.com:1234'), 'http://example.com:1234');
    assert.equal(parseOllamaHost(':1234'), 'http://127.0.0.1:1234');
    assert.equal(parseOllamaHost('0.0.0.0:8080'), 'http://127.0.0.1:8080');
    assert.equal(parseOllamaHost('http://example.com'), 'http://example.com:80');
    assert.equal(parseOllamaHost('https://example.com/ollama'), 'https://example.com:443/ollama');
    assert.equal(parseOllamaHost('ollama.com'), 'https://ollama.com:443');
    assert.equal(parseOllamaHost('[::1]:5000'), 'http://[::1]:5000');
    assert.equal(parseOllamaHost('example.com:99999'), 'http://example.com:11434');
  });
});

describe('run helpers', () => {
  it('parses --think and /set parameter values', () => {
    assert.equal(parseThink(true), true);
    assert.equal(parseThink('false'), false);
    assert.equal(parseThink('high'), 'high');
    assert.throws(() => parseThink('lots'), /invalid value for --think/);
    assert.equal(parseParameter('num_predict', ['4']), 4);
    assert.deepEqual(parseParameter('stop', ['a', 'b']), ['a', 'b']);
    assert.equal(parseParameter('penalize_newline', ['true']), true);
  });
  it('extracts existing image paths only', () => {
    const r = extractImages('what is in /no/such/file.png ?');
    assert.equal(r.images.length, 0);
    assert.equal(r.prompt, 'what is in /no/such/file.png ?');
    const dir = mkdtempSync(join(tmpdir(), 'llamad-cli-img-'));
    try {
      writeFileSync(join(dir, 'a b.jpg'), 'JPEG');
      writeFileSync(join(dir, 'c.PNG'), 'PNG');
      writeFileSync(join(dir, 'd.wav'), 'RIFF');
      const got = extractImages(
        `compare ${join(dir, 'a\\ b.jpg')} and "${join(dir, 'c.PNG')}" with ${join(dir, 'd.wav')} please`,
      );
      assert.deepEqual(got.paths, [join(dir, 'a b.jpg'), join(dir, 'c.PNG'), join(dir, 'd.wav')]);
      assert.deepEqual(
        got.images.map((b) => Buffer.from(b).toString()),
        ['JPEG', 'PNG', 'RIFF'],
      );
      assert.equal(got.prompt, 'compare  and  with  please');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Codex config merge', () => {
  it('replaces only the llamad table and the two top-level keys', () => {
    const before =
      '# my settings\nmodel = "o3"\napproval_policy = "never"\n\n[model_providers.llamad]\nbase_url = "x"\n\n' +
      '[model_providers.other]\nname = "o"\n';
    const after = mergeCodexConfig(before, { model: 'm', baseUrl: 'http://127.0.0.1:11434/v1' });
    assert.equal(
      after,
      'model = "m"\nmodel_provider = "llamad"\n# my settings\napproval_policy = "never"\n\n' +
        '[model_providers.other]\nname = "o"\n\n' +
        '[model_providers.llamad]\nname = "llamad"\nbase_url = "http://127.0.0.1:11434/v1"\nwire_api = "responses"\n',
    );
    assert.equal(mergeCodexConfig(after, { model: 'm', baseUrl: 'http://127.0.0.1:11434/v1' }), after);
    assert.equal(
      mergeCodexConfig('', { model: 'm', baseUrl: 'u', envKey: 'LLAMAD_API_KEY' }),
      'model = "m"\nmodel_provider = "llamad"\n\n[model_providers.llamad]\nname = "llamad"\nbase_url = "u"\n' +
        'wire_api = "responses"\nenv_key = "LLAMAD_API_KEY"\n',
    );
  });
});

describe('word wrap and plain progress', () => {
  it('wraps words at the width, passes through with width 0', () => {
    let out = '';
    const w = new WordWrapper((s) => (out += s), 10);
    for (const piece of ['hello wo', 'rld, this is', ' a test\nnext line']) w.put(piece);
    w.flush();
    assert.equal(out, 'hello \nworld, \nthis is a \ntest\nnext line');
    let raw = '';
    const p = new WordWrapper((s) => (raw += s), 0);
    p.put('hello world');
    assert.equal(raw, 'hello world');
  });
  it('prints each status once and a start and end line per layer', () => {
    let out = '';
    const view = new ProgressView({ write: (s: string) => ((out += s), true) } as unknown as NodeJS.WriteStream, false);
    view.update({ status: 'pulling manifest' });
    for (const completed of [0, 500, 1500]) {
      view.update({ status: 'pulling abc', digest: 'sha256:abc', total: 1500, completed });
    }
    view.update({ status: 'verifying sha256 digest' });
    view.update({ status: 'verifying sha256 digest' });
    view.update({ status: 'success' });
    view.stop();
    assert.equal(
      out,
      'pulling manifest\npulling abc: 1.5 KB\npulling abc: 100% 1.5 KB\nverifying sha256 digest\nsuccess\n',
    );
    assert.equal(timeLeft(30), '30s');
    assert.equal(timeLeft(125), '2m5s');
    assert.equal(timeLeft(3725), '1h2m');
  });
});
