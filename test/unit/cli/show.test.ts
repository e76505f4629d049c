import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ShowResponse } from 'ollama';
import { goFixed, goFloat, goTable, goValue, humanNumber } from '../../../src/cli/gofmt';
import { metadataValue, showInfo } from '../../../src/cli/show';

const details = { family: 'test', parameter_size: '7B', quantization_level: 'FP16' };
const show = (r: Record<string, unknown>, verbose = false) => showInfo(r as unknown as ShowResponse, verbose);

// The expected bytes are those of Ollama's cmd/cmd_test.go TestShowInfo (trailing spaces included).
describe('show: cmd/cmd.go showInfo byte for byte', () => {
  it('bare details', () => {
    assert.equal(
      show({ details }),
      '  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n',
    );
  });

  it('bare model info: context and embedding length, parameters from details.parameter_size', () => {
    assert.equal(
      show({
        details,
        model_info: {
          'general.architecture': 'test',
          'general.parameter_count': 7_000_000_000,
          'test.context_length': 0,
          'test.embedding_length': 0,
        },
      }),
      '  Model\n    architecture        test    \n    parameters          7B      \n    context length      0       \n' +
        '    embedding length    0       \n    quantization        FP16    \n\n',
    );
  });

  it('item 11: starts with "  Model" and parameters is details.parameter_size, not the metadata count', () => {
    const out = show({
      details: { ...details, parameter_size: '494.03M' },
      model_info: { 'general.architecture': 'qwen2', 'general.parameter_count': 494_032_768 },
    });
    assert.ok(out.startsWith('  Model\n'));
    assert.match(out, /^ {4}parameters {6}494\.03M {4}$/m);
  });

  it('verbose: Metadata with %g numbers, then Tensors (before System and License)', () => {
    assert.equal(
      show(
        {
          details: { ...details, parameter_size: '8B' },
          parameters: '\nstop up',
          model_info: {
            'general.architecture': 'test',
            'general.parameter_count': 8_000_000_000,
            'some.true_bool': true,
            'some.false_bool': false,
            'test.context_length': 1000,
            'test.embedding_length': 11434,
          },
          tensors: [
            { name: 'blk.0.attn_k.weight', type: 'BF16', shape: [42, 3117] },
            { name: 'blk.0.attn_q.weight', type: 'FP16', shape: [3117, 42] },
          ],
        },
        true,
      ),
      '  Model\n    architecture        test     \n    parameters          8B       \n    context length      1000     \n' +
        '    embedding length    11434    \n    quantization        FP16     \n\n  Parameters\n    stop    up    \n\n' +
        '  Metadata\n    general.architecture       test     \n    general.parameter_count    8e+09    \n' +
        '    some.false_bool            false    \n    some.true_bool             true     \n' +
        '    test.context_length        1000     \n    test.embedding_length      11434    \n\n' +
        '  Tensors\n    blk.0.attn_k.weight    BF16    [42 3117]    \n    blk.0.attn_q.weight    FP16    [3117 42]    \n\n',
    );
    const withSystem = show(
      { details, system: 'be brief', license: 'MIT', model_info: { 'general.architecture': 'test' } },
      true,
    );
    assert.ok(withSystem.indexOf('  Metadata') < withSystem.indexOf('  System'));
    assert.ok(withSystem.indexOf('  System') < withSystem.indexOf('  License'));
  });

  it('parameters, projector, system, license', () => {
    assert.equal(
      show({ details, parameters: '\nstop never\nstop gonna\nstop give\nstop you\nstop up\ntemperature 99' }),
      '  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n' +
        '  Parameters\n    stop           never    \n    stop           gonna    \n    stop           give     \n' +
        '    stop           you      \n    stop           up       \n    temperature    99       \n\n',
    );
    assert.equal(
      show({
        details,
        projector_info: {
          'general.architecture': 'clip',
          'general.parameter_count': 133_700_000,
          'clip.vision.embedding_length': 0,
          'clip.vision.projection_dim': 0,
        },
      }),
      '  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n' +
        '  Projector\n    architecture        clip       \n    parameters          133.70M    \n' +
        '    embedding length    0          \n    dimensions          0          \n\n',
    );
    assert.equal(
      show({ details, system: 'You are a pirate!\nAhoy, matey!\nWeigh anchor!\n\t\t\t' }),
      '  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n' +
        '  System\n    You are a pirate!    \n    Ahoy, matey!         \n    ...                  \n\n',
    );
    assert.equal(
      show({ details, license: 'MIT License\nCopyright (c) Ollama\n' }),
      '  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n' +
        '  License\n    MIT License             \n    Copyright (c) Ollama    \n\n',
    );
    assert.equal(
      show({ details, capabilities: ['vision', 'tools'] }),
      '  Model\n    architecture    test    \n    parameters      7B      \n    quantization    FP16    \n\n' +
        '  Capabilities\n    vision    \n    tools     \n\n',
    );
  });

  it('item 1: a vocabulary-sized array is shortened, never printed whole', () => {
    const vocab = Array.from({ length: 151_936 }, (_, i) => String.fromCharCode(33 + (i % 90)));
    assert.equal(metadataValue(vocab.slice(0, 20)), '[! " # ...+17 more]');
    assert.equal(metadataValue(vocab), '[! " # ...+151933 more]');
    assert.equal(metadataValue([1, 2]), '[1 2]');
    assert.equal(metadataValue([]), '[]');
    assert.equal(metadataValue(['abcdefghijkl', 'x']), '[abcdefghijkl ...+1 more]');
    assert.equal(metadataValue(null), '<nil>');
    const out = show(
      { details, model_info: { 'general.architecture': 'qwen2', 'tokenizer.ggml.tokens': vocab } },
      true,
    );
    assert.ok(out.length < 1000, `${out.length} characters`);
    assert.match(out, /^ {4}tokenizer\.ggml\.tokens {4}\[! " # \.\.\.\+151933 more\] {4}$/m);
  });
});

describe('Go formatting helpers', () => {
  it('goFloat is strconv.FormatFloat(x, g, -1, 64)', () => {
    assert.equal(goFloat(8e9), '8e+09');
    assert.equal(goFloat(1e6), '1e+06');
    assert.equal(goFloat(123456), '123456');
    assert.equal(goFloat(1234567), '1.234567e+06');
    assert.equal(goFloat(1e-6), '1e-06');
    assert.equal(goFloat(9.999999747378752e-6), '9.999999747378752e-06');
    assert.equal(goFloat(0.0001), '0.0001');
    assert.equal(goFloat(0.5), '0.5');
    assert.equal(goFloat(-2.5), '-2.5');
    assert.equal(goFloat(0), '0');
    assert.equal(goFloat(1e21), '1e+21');
  });
  it('goValue is %v', () => {
    assert.equal(goValue(['a', 1, true, [2]]), '[a 1 true [2]]');
    assert.equal(goValue({ b: 1, a: 'x' }), 'map[a:x b:1]');
  });
  it('humanNumber is format.HumanNumber', () => {
    for (const [n, s] of [
      [0, '0'],
      [999, '999'],
      [1000, '1K'],
      [1001, '1K'],
      [1_000_000, '1M'],
      [125_000_000, '125M'],
      [500_500_000, '500.50M'],
      [500_550_000, '500.55M'],
      [1_000_000_000, '1B'],
      [2_800_000_000, '2.8B'],
      [2_850_000_000, '2.9B'],
      [1_000_000_000_000, '1000B'],
    ] as const) {
      assert.equal(humanNumber(n), s, String(n));
    }
  });
  it('goFixed rounds exact ties half to even, as Go %.Nf', () => {
    assert.equal(goFixed(2.25, 1), '2.2');
    assert.equal(goFixed(2.75, 1), '2.8');
    assert.equal(goFixed(2.45, 1), '2.5'); // 2.45 is 2.4500000000000001776…: no tie
    assert.equal(goFixed(0.125, 2), '0.12');
    assert.equal(goFixed(2.5, 0), '2');
    assert.equal(goFixed(3.5, 0), '4');
    assert.equal(goFixed(-2.25, 1), '-2.2');
    assert.equal(humanNumber(2_250_000_000), '2.2B');
  });
  it('goTable wraps cells wider than 30 columns at spaces, as tablewriter', () => {
    const long = 'one two three four five six seven eight nine ten';
    const out = goTable([['', 'k', long]]);
    const lines = out.split('\n').filter(Boolean);
    assert.ok(lines.length > 1, out);
    for (const l of lines) assert.ok(l.startsWith('    '), l);
    assert.equal(lines.map((l) => l.slice(9).trim()).join(' '), long);
  });
});
