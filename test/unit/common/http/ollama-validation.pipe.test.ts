import 'reflect-metadata';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ArgumentMetadata } from '@nestjs/common';
import { InvalidRequestError, RequestCancelledError } from '../../../../src/common/errors';
import { runWithClientGone } from '../../../../src/common/http/client-gone';
import {
  decodeRequestBody,
  OllamaValidationPipe,
  SLICED_ARRAY_MIN_ITEMS,
} from '../../../../src/common/http/ollama-validation.pipe';
import { ChatRequestDto, MessageDto } from '../../../../src/api/ollama/dto/chat-request.dto';
import { CreateRequestDto } from '../../../../src/api/ollama/dto/create-request.dto';
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

/** A chat body of `count` messages, each with an unknown field (dropped by validation); `patch` edits it. */
function longChat(count: number, patch: (messages: unknown[]) => void = () => {}): Record<string, unknown> {
  const messages: unknown[] = Array.from({ length: count }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `message ${i}`,
    unknown_field: i,
  }));
  patch(messages);
  return { model: 'm', messages, stream: false };
}

/** The error `run` throws (an InvalidRequestError), as message and param. */
async function errorOf(run: () => unknown): Promise<{ message: string; param?: string }> {
  try {
    await run();
  } catch (err) {
    assert.ok(err instanceof InvalidRequestError, `expected InvalidRequestError, got ${String(err)}`);
    return { message: err.message, param: err.param };
  }
  assert.fail('expected a validation error');
}

/** The pipe's error (sliced validation) and the synchronous decoder's (one validateSync) for the same body. */
async function bothErrors(body: () => unknown, metatype: ArgumentMetadata['metatype'] = ChatRequestDto) {
  const sliced = await errorOf(() => pipe.transform(body(), meta(metatype)));
  const whole = await errorOf(() => decodeRequestBody(metatype as typeof ChatRequestDto, body()));
  return { sliced, whole };
}

// Issue 32 item 2: a body with thousands of nested DTOs is validated in slices, with the errors of one validateSync.
describe('OllamaValidationPipe on large nested arrays', () => {
  it('reports a bad message at index 0, 150 and 3,999 with the same message and param as one validateSync', async () => {
    for (const index of [0, 150, 3999]) {
      const { sliced, whole } = await bothErrors(() =>
        longChat(4000, (m) => ((m[index] as Record<string, unknown>).role = 5)),
      );
      assert.deepEqual(sliced, whole);
      assert.deepEqual(sliced, {
        message: 'json: cannot unmarshal number into Go struct field Message.role of type string',
        param: `messages.${index}.role`,
      });
    }
  });

  it('keeps validateSync’s precedence between fields, array-level and element errors', async () => {
    const cases: Array<[string, () => unknown]> = [
      // A non-object element anywhere: the array-level message wins over an earlier element's own error.
      [
        'non-object after a bad element',
        () => longChat(4000, (m) => (((m[150] as { role: unknown }).role = 5), (m[3999] = 'x'))),
      ],
      ['null element', () => longChat(300, (m) => (m[200] = null))],
      // A field declared before `messages` comes first; one declared after it comes after the element's error.
      [
        'bad model and bad element',
        () => ({ ...longChat(4000, (m) => ((m[150] as { role: unknown }).role = 5)), model: 5 }),
      ],
      [
        'bad stream and bad element',
        () => ({ ...longChat(4000, (m) => ((m[150] as { role: unknown }).role = 5)), stream: 'yes' }),
      ],
      ['bad stream only', () => ({ ...longChat(4000), stream: 'yes' })],
      ['second field of an element', () => longChat(500, (m) => ((m[499] as { images: unknown }).images = [1]))],
    ];
    for (const [name, body] of cases) {
      const { sliced, whole } = await bothErrors(body);
      assert.deepEqual(sliced, whole, name);
    }
    const { sliced } = await bothErrors(() => longChat(4000, (m) => (m[3999] = 'x')));
    assert.equal(sliced.param, 'messages');
  });

  it('applies to any DTO with a nested array (create’s messages), not only chat', async () => {
    const body = () => ({
      model: 'x',
      from: 'y',
      messages: Array.from({ length: SLICED_ARRAY_MIN_ITEMS + 50 }, (_, i) => ({ role: i === 170 ? [] : 'user' })),
    });
    const { sliced, whole } = await bothErrors(body, CreateRequestDto);
    assert.deepEqual(sliced, whole);
    assert.equal(sliced.param, 'messages.170.role');
  });

  it('builds the same DTO as the synchronous decoder (instances, unknown fields dropped)', async () => {
    const dto = (await pipe.transform(longChat(4000), meta(ChatRequestDto))) as ChatRequestDto;
    const whole = decodeRequestBody(ChatRequestDto, longChat(4000));
    assert.equal(dto.messages?.length, 4000);
    assert.ok(dto.messages?.every((m) => m instanceof MessageDto));
    assert.deepEqual(dto, whole);
    assert.equal((dto.messages?.[3999] as Record<string, unknown>).unknown_field, undefined);
  });

  it('yields to the event loop while it validates 4,000 messages', async () => {
    const body = longChat(4000);
    let ranBefore = false;
    let finished = false;
    setImmediate(() => (ranBefore = !finished));
    await pipe.transform(body, meta(ChatRequestDto));
    finished = true;
    assert.ok(ranBefore, 'a setImmediate callback scheduled before the validation ran before it finished');
  });

  it('stops when the request’s client has gone', async () => {
    await assert.rejects(
      runWithClientGone(
        () => true,
        () => pipe.transform(longChat(4000), meta(ChatRequestDto)),
      ),
      RequestCancelledError,
    );
  });
});
