import 'reflect-metadata';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ArgumentMetadata } from '@nestjs/common';
import { InvalidRequestError } from '../../../../src/common/errors';
import { OllamaValidationPipe } from '../../../../src/common/http/ollama-validation.pipe';
import { ChatRequestDto } from '../../../../src/api/ollama/dto/chat-request.dto';
import { GenerateRequestDto } from '../../../../src/api/ollama/dto/generate-request.dto';

const pipe = new OllamaValidationPipe();
const meta = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'body', metatype });

async function message(value: unknown, metatype: ArgumentMetadata['metatype'] = GenerateRequestDto): Promise<string> {
  try {
    await pipe.transform(value, meta(metatype));
  } catch (err) {
    assert.ok(err instanceof InvalidRequestError, `expected InvalidRequestError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected a validation error');
}

describe('OllamaValidationPipe', () => {
  it('answers a missing body with Ollama’s text', async () => {
    assert.equal(await message(undefined), 'missing request body');
  });

  it('rejects bodies that are not objects like Go’s decoder', async () => {
    assert.equal(await message([1]), 'json: cannot unmarshal array into Go value of type api.GenerateRequest');
    assert.equal(
      await message('x', ChatRequestDto),
      'json: cannot unmarshal string into Go value of type api.ChatRequest',
    );
  });

  it('reports a field of the wrong JSON type like Go', async () => {
    assert.equal(
      await message({ model: 'm', prompt: 5 }),
      'json: cannot unmarshal number into Go struct field GenerateRequest.prompt of type string',
    );
    assert.equal(
      await message({ model: 'm', stream: 'yes' }),
      'json: cannot unmarshal string into Go struct field GenerateRequest.stream of type bool',
    );
    assert.equal(
      await message({ model: 'm', messages: 'hi' }, ChatRequestDto),
      'json: cannot unmarshal string into Go struct field ChatRequest.messages of type []api.Message',
    );
    assert.equal(
      await message({ model: 'm', messages: [{ role: 'user', content: 7 }] }, ChatRequestDto),
      'json: cannot unmarshal number into Go struct field Message.content of type string',
    );
  });

  it('drops unknown fields without rejecting them and keeps options as a plain map', async () => {
    const dto = (await pipe.transform(
      { model: 'm', prompt: 'p', temperature: 1, options: { anything: true } },
      meta(GenerateRequestDto),
    )) as GenerateRequestDto & { temperature?: number };
    assert.ok(dto instanceof GenerateRequestDto);
    assert.equal(dto.temperature, undefined);
    assert.deepEqual(dto.options, { anything: true });
  });

  it('treats a JSON null body as an empty request', async () => {
    const dto = (await pipe.transform(null, meta(GenerateRequestDto))) as GenerateRequestDto;
    assert.equal(dto.model, undefined);
  });
});
