import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import { decodeRequestBody } from '../../../../src/common/http/ollama-validation.pipe';
import { ChatRequestDto } from '../../../../src/api/ollama/dto/chat-request.dto';
import { GenerateRequestDto } from '../../../../src/api/ollama/dto/generate-request.dto';
import { decodeLora } from '../../../../src/api/ollama/dto/lora-request.dto';
import { fromChatRequest, fromGenerateRequest } from '../../../../src/api/ollama/ollama.mapper';
import { fromOpenAIChatRequest, fromOpenAICompletionRequest } from '../../../../src/api/openai/openai-request.mapper';

/** Asserts that `fn` throws InvalidRequestError with this message and param. */
function rejects(fn: () => unknown, message: string, param: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidRequestError, String(err));
    assert.equal(err.message, message);
    assert.equal(err.param, param);
    return true;
  });
}

const SHAPE =
  'lora must be an array of {"id": <adapter index>, "scale": <number>} or {"name": <model>, "scale": <number>}';

const generate = (lora: unknown) =>
  fromGenerateRequest(decodeRequestBody(GenerateRequestDto, { model: 'm', prompt: 'p', lora }), 0n);

describe('lora request field (native DTOs)', () => {
  it('carries id and name entries into the command, in order', () => {
    assert.deepEqual(
      generate([
        { id: 0, scale: 0.5 },
        { name: 'ft2', scale: -1, extra: true },
      ]).lora,
      [
        { id: 0, scale: 0.5 },
        { name: 'ft2', scale: -1 },
      ],
    );
    const chat = fromChatRequest(
      decodeRequestBody(ChatRequestDto, { model: 'm', messages: [], lora: [{ id: 1, scale: 0 }] }),
      0n,
    );
    assert.deepEqual(chat.lora, [{ id: 1, scale: 0 }]);
  });

  it('absent or null leaves the model’s adapters; [] is kept (the base weights)', () => {
    assert.equal(generate(undefined).lora, undefined);
    assert.equal(generate(null).lora, undefined);
    assert.deepEqual(generate([]).lora, []);
  });

  it('rejects a value that is not an array of objects', () => {
    rejects(() => generate({ id: 0, scale: 1 }), SHAPE, 'lora');
    rejects(() => generate(['ft1']), SHAPE, 'lora');
  });

  it('rejects more than 8 entries', () => {
    const many = Array.from({ length: 9 }, (_, i) => ({ id: i, scale: 1 }));
    rejects(() => generate(many), 'lora may list at most 8 entries', 'lora');
  });

  it('needs exactly one of id and name', () => {
    const oneOf = 'each lora entry needs exactly one of "id" (an adapter index of the model) and "name" (a model name)';
    rejects(() => generate([{ scale: 1 }]), oneOf, 'lora.0.id');
    rejects(
      () =>
        generate([
          { id: 0, scale: 1 },
          { id: 0, name: 'ft1', scale: 1 },
        ]),
      oneOf,
      'lora.1.id',
    );
  });

  it('checks id, name and scale values', () => {
    rejects(() => generate([{ id: -1, scale: 1 }]), 'lora id must be a non-negative integer', 'lora.0.id');
    rejects(() => generate([{ id: 0.5, scale: 1 }]), 'lora id must be a non-negative integer', 'lora.0.id');
    rejects(() => generate([{ id: '0', scale: 1 }]), 'lora id must be a non-negative integer', 'lora.0.id');
    rejects(
      () => generate([{ name: '', scale: 1 }]),
      'lora name must be a non-empty string (a model name)',
      'lora.0.name',
    );
    const scale = 'lora scale must be a number from -100 to 100';
    for (const bad of [undefined, '1', 100.5, -101, null]) {
      rejects(() => generate([{ id: 0, scale: bad }]), scale, 'lora.0.scale');
    }
    assert.deepEqual(generate([{ id: 0, scale: -100 }]).lora, [{ id: 0, scale: -100 }]);
  });
});

describe('lora request field (OpenAI routes)', () => {
  const messages = [{ role: 'user', content: 'hi' }];

  it('chat completions and completions carry it with the native rules', () => {
    assert.deepEqual(fromOpenAIChatRequest({ model: 'm', messages, lora: [{ name: 'ft2', scale: 1 }] }, 0n).lora, [
      { name: 'ft2', scale: 1 },
    ]);
    const cmds = fromOpenAICompletionRequest({ model: 'm', prompt: ['a', 'b'], lora: [{ id: 0, scale: 0 }] }, 0n);
    assert.deepEqual(
      cmds.map((c) => c.lora),
      [[{ id: 0, scale: 0 }], [{ id: 0, scale: 0 }]],
    );
    assert.equal(fromOpenAIChatRequest({ model: 'm', messages }, 0n).lora, undefined);
  });

  it('bad input is a 400 naming the field', () => {
    rejects(
      () => fromOpenAIChatRequest({ model: 'm', messages, lora: [{ id: 0 }] }, 0n),
      'lora scale must be a number from -100 to 100',
      'lora.0.scale',
    );
    rejects(() => decodeLora('ft1'), SHAPE, 'lora');
    assert.equal(decodeLora(null), undefined);
  });
});
