import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatRequestDto, MessageDto } from '../../../../src/api/ollama';
import { decodeRequestBody } from '../../../../src/common/http';
import { plainToDto } from '../../../../src/common/validation';

describe('plainToDto (free-form JSON is never walked)', () => {
  it('keeps free-form values verbatim, whatever their keys', () => {
    const body = JSON.parse(
      '{"model":"m","options":{"constructor":1,"__proto__":{"x":1},"valueOf":2},' +
        '"format":{"properties":{"constructor":{"type":"string"},"toString":{"type":"string"}}},' +
        '"messages":[{"role":"user","content":"hi","prototype":1}]}',
    ) as object;
    const dto = plainToDto(ChatRequestDto, body);
    assert.ok(dto instanceof ChatRequestDto);
    assert.ok(dto.messages?.[0] instanceof MessageDto, 'nested DTOs become instances');
    assert.ok(Object.prototype.hasOwnProperty.call(dto.options, '__proto__'));
    assert.equal((dto.options as Record<string, unknown>).constructor, 1);
    const format = dto.format as { properties: Record<string, unknown> };
    assert.deepEqual(Object.keys(format.properties), ['constructor', 'toString']);
  });

  it('drops DTO-level keys named like Object.prototype members (unknown fields, as Go drops them)', () => {
    const body = JSON.parse('{"model":"m","constructor":1,"__proto__":{"model":"evil"},"toString":"x"}') as object;
    const dto = plainToDto(ChatRequestDto, body);
    assert.equal(Object.getPrototypeOf(dto), ChatRequestDto.prototype);
    assert.equal(dto.model, 'm');
    assert.equal(Object.prototype.hasOwnProperty.call(dto, 'constructor'), false);
  });

  it('decodeRequestBody validates such a body instead of throwing a TypeError', () => {
    const body = JSON.parse(
      '{"model":"m","messages":[{"role":"user","content":"hi","constructor":{"a":1}}],' +
        '"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"constructor":{}}}}}]}',
    ) as object;
    const dto = decodeRequestBody(ChatRequestDto, body);
    assert.equal(dto.messages?.[0].content, 'hi');
    assert.throws(
      () => decodeRequestBody(ChatRequestDto, { model: 'm', messages: 'x' }),
      /cannot unmarshal string into Go struct field ChatRequest.messages/,
    );
  });
});
