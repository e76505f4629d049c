import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { InvalidRequestError } from '../../../src/common/errors';
import { closeRenderPool } from '../../../src/templates';
import {
  blobReference,
  checkGoTemplate,
  checkQuantizableSource,
  normalizeDigest,
  parseQuantizeType,
  requireDigest,
} from '../../../src/models/create-support';
import { CreateRequestDto } from '../../../src/api/ollama/dto/create-request.dto';
import { fromCreateRequest } from '../../../src/api/ollama/models.mapper';

const HEX = 'aB'.repeat(32);

describe('create/blob digests (§3.10)', () => {
  it('accepts sha256:<hex> and sha256-<hex> in any hex case, normalized to sha256:<lower>', () => {
    assert.equal(normalizeDigest(`sha256:${HEX}`), `sha256:${HEX.toLowerCase()}`);
    assert.equal(normalizeDigest(`sha256-${HEX}`), `sha256:${HEX.toLowerCase()}`);
  });

  it('rejects anything else', () => {
    for (const bad of ['', 'sha256:', `sha256:${HEX}0`, `sha256:${HEX.slice(1)}`, `sha512:${HEX}`, `SHA256:${HEX}`]) {
      assert.equal(normalizeDigest(bad), null, bad);
    }
    assert.equal(normalizeDigest(`sha256:${'g'.repeat(64)}`), null);
    assert.throws(
      () => requireDigest('nope'),
      (e: unknown) => e instanceof InvalidRequestError && e.message === 'invalid digest format',
    );
  });

  it('reads FROM/ADAPTER blob references with or without @', () => {
    assert.equal(blobReference(`@sha256:${HEX}`), `sha256:${HEX.toLowerCase()}`);
    assert.equal(blobReference(`sha256-${HEX}`), `sha256:${HEX.toLowerCase()}`);
    assert.equal(blobReference('llama3'), null);
    assert.equal(blobReference('./model.gguf'), null);
  });
});

describe('quantize types (§3.9)', () => {
  it('is case-insensitive and maps Q4_K to Q4_K_M', () => {
    assert.equal(parseQuantizeType('q4_K_M'), 'Q4_K_M');
    assert.equal(parseQuantizeType('q4_k_s'), 'Q4_K_S');
    assert.equal(parseQuantizeType('Q4_K'), 'Q4_K_M');
    assert.equal(parseQuantizeType('q8_0'), 'Q8_0');
    assert.equal(parseQuantizeType('q4_0'), 'Q4_0');
    assert.equal(parseQuantizeType('f16'), 'F16');
    assert.equal(parseQuantizeType('F32'), 'F32');
  });

  it("rejects unknown types with Ollama's message", () => {
    assert.throws(
      () => parseQuantizeType('q9_z'),
      (e: unknown) =>
        e instanceof InvalidRequestError &&
        /^unsupported quantization type q9_z - supported types are F32, F16, /.test(e.message),
    );
  });

  it('only quantizes F16, BF16 and F32 sources', () => {
    for (const ok of ['F16', 'BF16', 'F32', 'f16']) checkQuantizableSource(ok);
    for (const bad of ['Q4_0', 'Q8_0', 'Q4_K_M', '']) {
      assert.throws(
        () => checkQuantizableSource(bad),
        (e: unknown) =>
          e instanceof InvalidRequestError &&
          e.message === 'quantization is only supported for F16, BF16 and F32 models',
      );
    }
  });
});

describe('template check', () => {
  after(() => closeRenderPool());

  it('accepts a valid Go template and rejects a broken one with `template error: …`', async () => {
    await checkGoTemplate('{{ .System }} {{ .Prompt }}');
    await assert.rejects(
      () => checkGoTemplate('{{ .Prompt'),
      (e: unknown) => e instanceof InvalidRequestError && /^template error: template: /.test(e.message),
    );
  });

  it('refuses a template that runs past the execution budget on sample values (chat, tools, thinking, FIM)', async () => {
    const budget = (e: unknown): boolean =>
      e instanceof InvalidRequestError && /^template: execution budget exceeded: more than \d+ /.test(e.message);
    for (const t of [
      '{{range 100000000000}}{{end}}',
      '{{ .Prompt }}{{range 100000}}{{range 100000}}{{end}}{{end}}',
      '{{$x := "xxxxxxxx"}}{{range 60}}{{$x = printf "%s%s" $x $x}}{{end}}',
      '{{ if .Tools }}{{range 100000000000}}{{end}}{{ end }}{{ range .Messages }}{{ .Content }}{{ end }}',
      '{{ range .Messages }}{{ range .ToolCalls }}{{range 100000000000}}{{end}}{{ end }}{{ end }}',
      '{{ range .Messages }}{{ if .Thinking }}{{range 100000000000}}{{end}}{{ end }}{{ end }}',
      '{{ if .Think }}{{range 100000000000}}{{end}}{{ end }}',
      '{{ if .Suffix }}{{range 100000000000}}{{end}}{{ end }}',
    ]) {
      await assert.rejects(() => checkGoTemplate(t), budget, t);
    }
  });

  it('accepts templates that only fail on values a real request may not give', async () => {
    await checkGoTemplate('{{ index .Messages 40 }}');
    await checkGoTemplate('{{ (index .Messages 0).Nope }}');
    await checkGoTemplate('{{ range 1000 }}{{ . }}{{ end }}{{ range .Messages }}{{ .Content }}{{ end }}');
  });
});

describe('fromCreateRequest (create-form mapping)', () => {
  const dto = (o: Partial<CreateRequestDto>) => Object.assign(new CreateRequestDto(), o);

  it('maps the JSON form: name alias, files, adapters, quantize, quantization alias', () => {
    const d = `sha256:${'a'.repeat(64)}`;
    const cmd = fromCreateRequest(
      dto({ name: 'm', files: { 'x.gguf': d }, adapters: { 'l.gguf': d }, quantize: 'q8_0', license: ['a', 'b'] }),
    );
    assert.equal(cmd.model, 'm');
    assert.deepEqual(cmd.files, { 'x.gguf': d });
    assert.deepEqual(cmd.adapters, { 'l.gguf': d });
    assert.equal(cmd.quantize, 'q8_0');
    assert.deepEqual(cmd.license, ['a', 'b']);
    assert.equal(fromCreateRequest(dto({ model: 'm', from: 'b', quantization: 'Q4_0' })).quantize, 'Q4_0');
  });

  it('keeps quantize with the spec’s modelfile form', () => {
    const cmd = fromCreateRequest(dto({ model: 'm', modelfile: 'FROM x', quantize: 'q4_0' }));
    assert.equal(cmd.modelfile, 'FROM x');
    assert.equal(cmd.quantize, 'q4_0');
  });

  it('rejects non-string digests and bad roles', () => {
    assert.throws(() => fromCreateRequest(dto({ model: 'm', files: { a: 1 } })), /invalid digest format/);
    assert.throws(() => fromCreateRequest(dto({ model: 'm', adapters: { a: '' } })), /invalid digest format/);
    assert.throws(
      () => fromCreateRequest(dto({ model: 'm', from: 'x', messages: [{ role: 'tool', content: 'x' }] })),
      /message role must be one of/,
    );
  });
});
