import { applyDecorators } from '@nestjs/common';
import { Type } from 'class-transformer';
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

/**
 * Composite class-validator decorators whose messages reproduce Go's `encoding/json` type errors, which is what
 * Ollama returns for a field of the wrong JSON type (reference/ollama-api.md §1.1):
 * `json: cannot unmarshal <json kind> into Go struct field <Struct>.<field> of type <go type>`.
 * Every decorator makes the field optional (absent or null is allowed; required-ness is checked by the services
 * with Ollama's own messages, which differ per route).
 */

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
export function GoString(struct: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsString(goMessage(struct, 'string')));
}

/** Optional JSON boolean. */
export function GoBool(struct: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsBoolean(goMessage(struct, 'bool')));
}

/** Optional JSON integer. */
export function GoInt(struct: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsInt(goMessage(struct, 'int')));
}

/** Optional JSON number. */
export function GoFloat(struct: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsNumber({}, goMessage(struct, 'float64')));
}

/** Optional JSON object kept as a plain map (e.g. `options`). */
export function GoMap(struct: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsObject(goMessage(struct, 'map[string]interface {}')));
}

/** Optional array of strings. */
export function GoStringArray(struct: string): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray(goMessage(struct, '[]string')),
    IsString(goEachMessage(struct, 'string')),
  );
}

/** Optional array of integers. */
export function GoIntArray(struct: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsArray(goMessage(struct, '[]int')), IsInt(goEachMessage(struct, 'int')));
}

/** Optional array of objects (kept as plain values, e.g. `tools`). */
export function GoObjectArray(struct: string, goType: string): PropertyDecorator {
  return applyDecorators(IsOptional(), IsArray(goMessage(struct, goType)), IsObject(goEachMessage(struct, goType)));
}

/** Optional array of nested DTOs, each validated by its own class. */
export function GoNestedArray(struct: string, goType: string, cls: () => new () => object): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray(goMessage(struct, goType)),
    IsObject(goEachMessage(struct, goType)),
    ValidateNested({ each: true }),
    Type(cls),
  );
}

/** Optional value of any JSON type (decoded later by the service, e.g. `keep_alive`, `format`, `think`). */
export function GoAny(): PropertyDecorator {
  return applyDecorators(IsOptional(), ValidateBy({ name: 'goAny', validator: { validate: () => true } }));
}

/** Optional string or array of strings (e.g. create's `license`). */
export function GoStringOrStringArray(struct: string): PropertyDecorator {
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
  );
}
