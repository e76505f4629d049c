import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DetokenizeRequestDto,
  LlamaServerTokenizeRequestDto,
  TokenizeRequestDto,
} from '../../../../src/api/ollama/dto/tokenize-request.dto';
import { InvalidRequestError } from '../../../../src/common/errors';
import { decodeRequestBody } from '../../../../src/common/http';
import { isTokenList } from '../../../../src/generation/tokenize.service';
import { isModulePath } from '../../../../src/llamad.module';

describe('tokenize / detokenize request bodies (beyond Ollama)', () => {
  it('accepts the documented fields', () => {
    const dto = decodeRequestBody(TokenizeRequestDto, {
      model: 'm',
      content: 'x',
      prompt: 'y',
      add_special: false,
      with_pieces: true,
      keep_alive: '5m',
      options: { num_ctx: 8 },
    });
    assert.equal(dto.content, 'x');
    assert.equal(dto.add_special, false);
    assert.deepEqual(decodeRequestBody(DetokenizeRequestDto, { model: 'm', tokens: [1, 2] }).tokens, [1, 2]);
    assert.equal(
      decodeRequestBody(LlamaServerTokenizeRequestDto, { content: 'x', parse_special: false }).parse_special,
      false,
    );
  });

  it('rejects wrong types with InvalidRequestError (400, Go-style messages)', () => {
    const bad = (fn: () => unknown) =>
      assert.throws(fn, (err) => err instanceof InvalidRequestError && /json: cannot/.test(err.message));
    bad(() => decodeRequestBody(TokenizeRequestDto, { model: 'm', content: 5 }));
    bad(() => decodeRequestBody(TokenizeRequestDto, { model: 'm', add_special: 'yes' }));
    bad(() => decodeRequestBody(DetokenizeRequestDto, { model: 'm', tokens: ['a'] }));
    bad(() => decodeRequestBody(DetokenizeRequestDto, { model: 'm', tokens: [1.5] }));
    bad(() => decodeRequestBody(DetokenizeRequestDto, { model: 'm', tokens: 3 }));
  });

  it('isTokenList: integers >= 0 only', () => {
    assert.ok(isTokenList([]));
    assert.ok(isTokenList([0, 5]));
    assert.ok(!isTokenList([-1]));
    assert.ok(!isTokenList([1.5]));
    assert.ok(!isTokenList(['1']));
    assert.ok(!isTokenList(1));
  });

  it("llama-server's /tokenize and /detokenize are module paths (request gate)", () => {
    assert.ok(isModulePath('/tokenize', ''));
    assert.ok(isModulePath('/detokenize', ''));
    assert.ok(!isModulePath('/tokenizer', ''));
  });
});
