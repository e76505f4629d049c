import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { InvalidRequestError } from '../errors';
import { jsonKind } from '../validation';

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

/**
 * The request-body pipe of every route (ARCHITECTURE.md §8): class-validator with `transform` and `whitelist`
 * (unknown fields are dropped silently — Ollama ignores them — never rejected), and an exceptionFactory that throws
 * InvalidRequestError with the first failing property as `param`. It also applies Ollama's body rules before
 * validation (§1.1): no body → `missing request body`; a JSON value that is not an object →
 * `json: cannot unmarshal <kind> into Go value of type <api.Type>`; `null` → an empty request.
 */
@Injectable()
export class OllamaValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: false,
      forbidUnknownValues: false,
      validationError: { target: false, value: true },
      exceptionFactory: (errors: ValidationError[]) => {
        const first = firstError(errors);
        return new InvalidRequestError(first?.message ?? 'invalid request', first?.path);
      },
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'body' || !metadata.metatype || metadata.metatype === Object) {
      return super.transform(value, metadata);
    }
    if (value === undefined || value === '') throw new InvalidRequestError('missing request body');
    const body = value === null ? {} : value;
    if (typeof body !== 'object' || Array.isArray(body)) {
      const goType = (metadata.metatype as GoTyped).goTypeName ?? metadata.metatype.name;
      throw new InvalidRequestError(`json: cannot unmarshal ${jsonKind(body)} into Go value of type ${goType}`);
    }
    return super.transform(body, metadata);
  }
}
