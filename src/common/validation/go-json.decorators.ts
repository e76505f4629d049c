import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import {
  IsArray,
  IsBoolean,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  ValidateBy,
  ValidateNested,
  ValidationArguments,
  ValidationOptions,
} from 'class-validator';
import { NestedDto } from './plain-to-dto';
import { Type } from 'class-transformer';

/**
 * Composite class-validator decorators whose messages reproduce Go's `encoding/json` type errors, which is what
 * Ollama returns for a field of the wrong JSON type (reference/ollama-api.md §1.1):
 * `json: cannot unmarshal <json kind> into Go struct field <Struct>.<field> of type <go type>`.
 * Every decorator makes the field optional (absent or null is allowed; required-ness is checked by the services
 * with Ollama's own messages, which differ per route), and documents the field's JSON type for the OpenAPI document
 * (src/openapi) under its wire name, so validation and documentation cannot drift apart.
 */

/**
 * The OpenAPI property of an optional field. `extra` adds to it (a description, an enum, `required`), or replaces
 * the schema when it gives its own `type`, `oneOf` or `anyOf`.
 */
function doc(schema: ApiPropertyOptions, extra: ApiPropertyOptions = {}): PropertyDecorator {
  const replaces = 'type' in extra || 'oneOf' in extra || 'anyOf' in extra;
  return ApiProperty({ required: false, ...(replaces ? {} : schema), ...extra } as ApiPropertyOptions);
}

/** Any JSON value (the OpenAPI form of a field typed `unknown`). */
const ANY_JSON: ApiPropertyOptions = {
  anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'object' }, { type: 'array' }],
};

/** Go's name for the JSON kind of a decoded value (UnmarshalTypeError.Value). */
export function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'number' : `number ${value}`;
  return typeof value;
}

/** Validation options whose message is Go's unmarshal error for `<struct>.<field>` of `goType`. */
function goMessage(struct: string, goType: string): ValidationOptions {
  return {
    message: (args: ValidationArguments) =>
      `json: cannot unmarshal ${jsonKind(args.value)} into Go struct field ${struct}.${args.property} of type ${goType}`,
  };
}

/** Same, for each element of an array field (Go names the field, not the index). */
function goEachMessage(struct: string, goType: string): ValidationOptions {
  return { ...goMessage(struct, goType), each: true };
}

/** Optional JSON string. */
export function GoString(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(IsOptional(), IsString(goMessage(struct, 'string')), doc({ type: 'string' }, api));
}

/** Optional JSON boolean. */
export function GoBool(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(IsOptional(), IsBoolean(goMessage(struct, 'bool')), doc({ type: 'boolean' }, api));
}

/** Optional JSON integer. */
export function GoInt(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(IsOptional(), IsInt(goMessage(struct, 'int')), doc({ type: 'integer' }, api));
}

/** Optional JSON number. */
export function GoFloat(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(IsOptional(), IsNumber({}, goMessage(struct, 'float64')), doc({ type: 'number' }, api));
}

/** Optional JSON object kept as a plain map (e.g. `options`). */
export function GoMap(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsObject(goMessage(struct, 'map[string]interface {}')),
    doc({ type: 'object', additionalProperties: true }, api),
  );
}

/** Optional array of strings. */
export function GoStringArray(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray(goMessage(struct, '[]string')),
    IsString(goEachMessage(struct, 'string')),
    doc({ type: 'array', items: { type: 'string' } }, api),
  );
}

/** Optional array of integers. */
export function GoIntArray(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray(goMessage(struct, '[]int')),
    IsInt(goEachMessage(struct, 'int')),
    doc({ type: 'array', items: { type: 'integer' } }, api),
  );
}

/** Optional array of objects (kept as plain values, e.g. `tools`). */
export function GoObjectArray(struct: string, goType: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray(goMessage(struct, goType)),
    IsObject(goEachMessage(struct, goType)),
    doc({ type: 'array', items: { type: 'object', additionalProperties: true } }, api),
  );
}

/** Optional array of nested DTOs, each validated by its own class. */
export function GoNestedArray(
  struct: string,
  goType: string,
  cls: () => new () => object,
  api?: ApiPropertyOptions,
): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray(goMessage(struct, goType)),
    IsObject(goEachMessage(struct, goType)),
    ValidateNested({ each: true }),
    // Ours (plainToDto) and class-transformer's (a host application's global ValidationPipe builds the DTOs too).
    NestedDto(cls),
    Type(cls),
    doc({ type: () => cls(), isArray: true }, api),
  );
}

/**
 * Optional value of any JSON type (decoded later by the service, e.g. `keep_alive`, `format`, `think`); `api` gives
 * the forms the service accepts (a `oneOf`) for the OpenAPI document.
 */
export function GoAny(api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    ValidateBy({ name: 'goAny', validator: { validate: () => true } }),
    doc(ANY_JSON, api),
  );
}

/** Optional string or array of strings (e.g. create's `license`). */
export function GoStringOrStringArray(struct: string, api?: ApiPropertyOptions): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    ValidateBy(
      {
        name: 'stringOrStringArray',
        validator: {
          validate: (v: unknown) =>
            typeof v === 'string' || (Array.isArray(v) && v.every((s) => typeof s === 'string')),
        },
      },
      goMessage(struct, 'string'),
    ),
    doc({ oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] }, api),
  );
}
