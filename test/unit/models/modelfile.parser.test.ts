import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../src/common/errors';
import { parseModelfile } from '../../../src/models/modelfile.parser';

function parseError(text: string): InvalidRequestError {
  try {
    parseModelfile(text);
  } catch (err) {
    assert.ok(err instanceof InvalidRequestError, `expected InvalidRequestError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a parse error');
}

describe('parseModelfile commands', () => {
  it('parses every command', () => {
    const file = parseModelfile(
      [
        'FROM llama3.2',
        'TEMPLATE {{ .Prompt }}',
        'SYSTEM You are helpful.',
        'PARAMETER temperature 0.7',
        'PARAMETER num_ctx 4096',
        'LICENSE MIT',
        'LICENSE Apache-2.0',
        'MESSAGE user Hi',
        'MESSAGE assistant Hello!',
        'REQUIRES 0.14.0',
        'RENDERER qwen3',
        'PARSER qwen3',
      ].join('\n'),
    );
    assert.equal(file.from, 'llama3.2');
    assert.equal(file.template, '{{ .Prompt }}');
    assert.equal(file.system, 'You are helpful.');
    assert.deepEqual(
      [...file.parameters],
      [
        ['temperature', ['0.7']],
        ['num_ctx', ['4096']],
      ],
    );
    assert.deepEqual(file.licenses, ['MIT', 'Apache-2.0']);
    assert.deepEqual(file.messages, [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ]);
    assert.equal(file.requires, '0.14.0');
    assert.equal(file.renderer, 'qwen3');
    assert.equal(file.parser, 'qwen3');
    assert.equal(file.commands.length, 12);
    assert.deepEqual(
      file.commands.map((c) => c.line),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    );
  });

  it('is case-insensitive for command words', () => {
    const file = parseModelfile('from base\nsystem hi\nParameter top_k 10');
    assert.equal(file.from, 'base');
    assert.equal(file.system, 'hi');
    assert.deepEqual(file.parameters.get('top_k'), ['10']);
  });

  it('accumulates repeated PARAMETER stop', () => {
    const file = parseModelfile('FROM x\nPARAMETER stop <|im_end|>\nPARAMETER stop "END"\nPARAMETER stop </s>');
    assert.deepEqual(file.parameters.get('stop'), ['<|im_end|>', 'END', '</s>']);
  });

  it('keeps extra FROM lines, adapters and draft apart', () => {
    const file = parseModelfile('FROM a\nFROM /p/mmproj.gguf\nADAPTER ./lora.gguf\nDRAFT ./small.gguf');
    assert.equal(file.from, 'a');
    assert.deepEqual(file.extraFrom, ['/p/mmproj.gguf']);
    assert.deepEqual(file.adapters, ['./lora.gguf']);
    assert.equal(file.draft, './small.gguf');
  });

  it('reads DRAFT case-insensitively, quoted or naming a model or blob', () => {
    assert.equal(parseModelfile('FROM a\ndraft "./my draft.gguf"').draft, './my draft.gguf');
    assert.equal(parseModelfile('FROM a\nDraft qwen2:0.5b').draft, 'qwen2:0.5b');
    assert.equal(parseModelfile(`FROM a\nDRAFT @sha256:${'0'.repeat(64)}`).draft, `@sha256:${'0'.repeat(64)}`);
    assert.equal(parseModelfile('FROM a').draft, undefined);
  });
});

describe('parseModelfile create-time values', () => {
  it('keeps blob references, repeated LICENSE (quoted, multi-line) and adapters verbatim', () => {
    const hex = 'a'.repeat(64);
    const q = '"""';
    const file = parseModelfile(
      `# uploaded blobs\nFROM @sha256:${hex}\nADAPTER sha256-${hex}\nLICENSE MIT\nLICENSE ${q}Line 1\nLine 2${q}\n` +
        `MESSAGE user "hi there"\nMESSAGE assistant ${q}hello\nagain${q}\nREQUIRES v0.14.0`,
    );
    assert.equal(file.from, `@sha256:${hex}`);
    assert.deepEqual(file.adapters, [`sha256-${hex}`]);
    assert.deepEqual(file.licenses, ['MIT', 'Line 1\nLine 2']);
    assert.deepEqual(file.messages, [
      { role: 'user', content: 'hi there' },
      { role: 'assistant', content: 'hello\nagain' },
    ]);
    assert.equal(file.requires, '0.14.0');
  });
});

describe('parseModelfile quoting and comments', () => {
  it('strips "…" and keeps inner spaces', () => {
    assert.equal(parseModelfile('FROM x\nSYSTEM "  spaced  "').system, '  spaced  ');
  });

  it('reads """…""" across lines verbatim', () => {
    const file = parseModelfile(
      'FROM x\nTEMPLATE """{{ if .System }}\n<<SYS>> "quoted" {{ .System }}\n{{ end }}"""\nSYSTEM s',
    );
    assert.equal(file.template, '{{ if .System }}\n<<SYS>> "quoted" {{ .System }}\n{{ end }}');
    assert.equal(file.system, 's');
  });

  it('lets a single "…" span lines', () => {
    assert.equal(parseModelfile('FROM x\nSYSTEM "line one\nline two"').system, 'line one\nline two');
  });

  it('trims unquoted values and keeps inner spaces', () => {
    assert.equal(parseModelfile('FROM x\nSYSTEM    a  b c   ').system, 'a  b c');
  });

  it('ignores comments and blank lines', () => {
    const file = parseModelfile('# header\n\n  # indented comment\nFROM x # not a comment\n\n# tail');
    assert.equal(file.from, 'x # not a comment');
    assert.equal(file.commands.length, 1);
  });

  it('accepts CRLF line endings and a BOM', () => {
    const file = parseModelfile('\uFEFFFROM x\r\nSYSTEM hello\r\n');
    assert.equal(file.from, 'x');
    assert.equal(file.system, 'hello');
  });

  it('decodes UTF-16 input with a byte-order mark', () => {
    const text = 'FROM x\nSYSTEM héllo';
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    assert.equal(parseModelfile(bytes).system, 'héllo');
  });

  it('keeps quotes of a MESSAGE value out of the content', () => {
    assert.deepEqual(parseModelfile('FROM x\nMESSAGE user """multi\nline"""').messages, [
      { role: 'user', content: 'multi\nline' },
    ]);
  });
});

describe('parseModelfile errors', () => {
  it('names the line of an unknown command', () => {
    const err = parseError('FROM x\nSYSTEM ok\nFOO bar');
    assert.match(err.message, /^\(line 3\): command must be one of "from", "license", "template"/);
  });

  it('names the line of a bad MESSAGE role', () => {
    assert.equal(
      parseError('FROM x\nMESSAGE robot hi').message,
      '(line 2): message role must be one of "system", "user", or "assistant"',
    );
  });

  it('reports an unterminated quote at the line where it opened', () => {
    assert.equal(parseError('FROM x\nSYSTEM """never closed\nmore').message, '(line 2): unexpected EOF');
  });

  it('reports a PARAMETER without a value', () => {
    assert.equal(parseError('FROM x\nPARAMETER temperature').message, '(line 2): unexpected EOF');
  });

  it('reports a bad parameter name character', () => {
    assert.equal(parseError('FROM x\nPARAMETER temp-erature 1').message, '(line 2): unexpected EOF');
  });

  it('requires a FROM line', () => {
    assert.equal(parseError('SYSTEM hi').message, 'no FROM line');
    assert.equal(parseError('').message, 'no FROM line');
  });

  it('rejects a REQUIRES that is not semver', () => {
    assert.equal(parseError('FROM x\nREQUIRES latest').message, 'requires must be a valid semver (e.g. 0.14.0)');
  });
});
