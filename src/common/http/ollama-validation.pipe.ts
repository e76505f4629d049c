import { ArgumentMetadata, Injectable, Type, ValidationError, ValidationPipe } from '@nestjs/common';
import { validateSync } from 'class-validator';
import { checkValueDepth } from './json-depth';
import { InvalidRequestError } from '../errors';
import { jsonKind, plainToDto } from '../validation';

/** A DTO class may name the Go type it mirrors, for Go-style messages about a body of the wrong JSON type. */
interface GoTyped {
  goTypeName?: string;
}

/** First failing constraint message and its property path (depth first, like Go's first error). */
function firstError(errors: ValidationError[], parent = ''): { message: string; path: string } | undefined {
  for (const e of errors) {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const messages = Object.values(e.constraints ?? {});
    if (messages.length > 0) return { message: messages[0], path };
    const nested = firstError(e.children ?? [], path);
    if (nested) return nested;
  }
  return undefined;
}

/** The class-validator options of the pipe (Go's decoder: unknown fields dropped silently, never rejected). */
const VALIDATOR_OPTIONS = {
  whitelist: true,
  forbidNonWhitelisted: false,
  forbidUnknownValues: false,
  validationError: { target: false, value: true },
} as const;

/**
 * Ollama's body rules that come before validation (§1.1), shared by the pipe and {@link decodeRequestBody}: no body →
 * `missing request body`; a JSON value that is not an object → `json: cannot unmarshal <kind> into Go value of type
 * <api.Type>`; `null` → an empty request; nesting deeper than MAX_JSON_DEPTH → 400 (a host application's body parser
 * does not check it the way the daemon's does).
 */
function checkBody(value: unknown, metatype: Type<unknown>): object {
  if (value === undefined || value === '') throw new InvalidRequestError('missing request body');
  const body = value === null ? {} : value;
  if (typeof body !== 'object' || Array.isArray(body)) {
    const goType = (metatype as GoTyped).goTypeName ?? metatype.name;
    throw new InvalidRequestError(`json: cannot unmarshal ${jsonKind(body)} into Go value of type ${goType}`);
  }
  checkValueDepth(body);
  return body;
}

/**
 * The pipe's work without Nest, synchronously (every DTO constraint is synchronous): a plain request object → a
 * validated DTO instance. Used by the LlamadService facade for requests that do not come through HTTP; an instance
 * of `metatype` (already validated by the pipe) is returned as is.
 * @throws InvalidRequestError as the pipe does.
 */
export function decodeRequestBody<T extends object>(metatype: Type<T>, value: unknown): T {
  if (value instanceof metatype) return value;
  const body = checkBody(value, metatype);
  // Not class-transformer's plainToInstance: it walks free-form JSON and fails on keys named `constructor`
  // (src/common/validation/plain-to-dto.ts).
  const instance = plainToDto(metatype, body);
  const errors = validateSync(instance, VALIDATOR_OPTIONS);
  if (errors.length > 0) {
    const first = firstError(errors);
    throw new InvalidRequestError(first?.message ?? 'invalid request', first?.path);
  }
  return instance;
}

/** Body types that are not DTO classes (`@Body() body: unknown` and primitives): left to ValidationPipe as before. */
const PASS_THROUGH_TYPES: unknown[] = [Object, String, Number, Boolean, Array];

/**
 * The request-body pipe of every route (ARCHITECTURE.md §8): class-validator with `transform` and `whitelist`
 * (unknown fields are dropped silently — Ollama ignores them — never rejected), and an exceptionFactory that throws
 * InvalidRequestError with the first failing property as `param`. It also applies Ollama's body rules before
 * validation (§1.1): no body → `missing request body`; a JSON value that is not an object →
 * `json: cannot unmarshal <kind> into Go value of type <api.Type>`; `null` → an empty request. A DTO body is built
 * by {@link decodeRequestBody} (free-form JSON below a field is kept verbatim, whatever its keys).
 */
@Injectable()
export class OllamaValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      ...VALIDATOR_OPTIONS,
      exceptionFactory: (errors: ValidationError[]) => {
        const first = firstError(errors);
        return new InvalidRequestError(first?.message ?? 'invalid request', first?.path);
      },
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const metatype = metadata.metatype;
    if (metadata.type !== 'body' || !metatype || PASS_THROUGH_TYPES.includes(metatype)) {
      return super.transform(value, metadata);
    }
    return decodeRequestBody(metatype as Type<object>, value);
  }
}
