import { ArgumentMetadata, Injectable, Type, ValidationError, ValidationPipe } from '@nestjs/common';
import { validateSync } from 'class-validator';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { currentClientGone } from './client-gone';
import { checkValueDepth } from './json-depth';
import { InvalidRequestError, RequestCancelledError } from '../errors';
import { isJsonObject, jsonKind, nestedClassOf, plainToDto } from '../validation';

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
  return decodeCheckedBody(metatype, checkBody(value, metatype));
}

/** {@link decodeRequestBody} of a body that passed {@link checkBody}. */
function decodeCheckedBody<T extends object>(metatype: Type<T>, body: object): T {
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

/** Arrays of nested DTOs longer than this are converted and validated item by item, in slices (issue 32 item 2). */
export const SLICED_ARRAY_MIN_ITEMS = 128;
/** Most items of a sliced array checked between two turns of the event loop. */
const SLICE_ITEMS = 64;
/** Longest run of item checks between two turns of the event loop, ms (a slow machine yields before 64 items). */
const SLICE_MS = 4;

/** The fields of `body` that hold an array of nested DTOs longer than {@link SLICED_ARRAY_MIN_ITEMS}. */
function bigNestedArrays(metatype: Type<unknown>, body: object): string[] {
  const keys: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (Array.isArray(value) && value.length > SLICED_ARRAY_MIN_ITEMS && nestedClassOf(metatype, key)) keys.push(key);
  }
  return keys;
}

/** The checked items of one big array, and the one that decides its first error the way validateSync would. */
interface SlicedArray {
  /** Every element: an object converted to its DTO and validated (unknown fields dropped), another value as is. */
  items: unknown[];
  /** The index of the element standing in for the whole array in the top-level validation, if any fails. */
  witnesses: number[];
}

/**
 * Converts and validates the elements of one big nested-DTO array one by one, yielding to the event loop every
 * {@link SLICE_ITEMS} items or {@link SLICE_MS} ms, and stopping when the client has gone. The first error of the
 * whole array under validateSync is the array-level message when any element is not an object (its `each`
 * constraints come before the elements' own errors), else the first error of the first failing element. So one
 * element stands for the array in the top-level validation (the first non-object one, else the first failing one)
 * and gives the same error; once one fails, the rest is only scanned for a non-object (the body is refused anyway).
 * @throws RequestCancelledError when the client left meanwhile.
 */
async function checkItems(cls: new () => object, array: unknown[]): Promise<SlicedArray> {
  const items: unknown[] = new Array<unknown>(array.length);
  let firstFailing = -1;
  let sliceStart = performance.now();
  for (let i = 0; i < array.length; i++) {
    if (i > 0 && (i % SLICE_ITEMS === 0 || performance.now() - sliceStart >= SLICE_MS)) {
      await nextTurn();
      if (currentClientGone()) throw new RequestCancelledError();
      sliceStart = performance.now();
    }
    const element = array[i];
    if (!isJsonObject(element)) {
      items[i] = element;
      return { items, witnesses: [i] };
    }
    if (firstFailing >= 0) continue;
    const item = plainToDto(cls, element);
    items[i] = item;
    if (validateSync(item, VALIDATOR_OPTIONS).length > 0) firstFailing = i;
  }
  return { items, witnesses: firstFailing >= 0 ? [firstFailing] : [] };
}

/** `path` with a big array's witness index (0 in the top-level validation) mapped back to its index in the body. */
function mapWitnessPath(path: string, sliced: Map<string, SlicedArray>): string {
  const [key, index, ...rest] = path.split('.');
  const array = sliced.get(key);
  if (!array || index === undefined) return path;
  const original = array.witnesses[Number(index)];
  return [key, String(original), ...rest].join('.');
}

/**
 * {@link decodeRequestBody} without holding the event loop on a large body (issue 32 item 2): a field holding more
 * than {@link SLICED_ARRAY_MIN_ITEMS} nested DTOs (a chat's `messages`, whatever the DTO) is converted and validated
 * element by element in slices, with a turn of the event loop between slices; the rest of the body is validated in
 * one pass with each such array stood for by the one element that decides its first error. Errors are the same as
 * {@link decodeRequestBody}'s: the same first failing constraint, message and `param` path (`messages.3999.role`).
 * The pipe uses it; a body without big arrays costs what the synchronous form costs.
 * @throws InvalidRequestError as the pipe does; RequestCancelledError when the request's client left meanwhile
 *   (nobody reads the answer).
 */
export async function decodeRequestBodySliced<T extends object>(metatype: Type<T>, value: unknown): Promise<T> {
  if (value instanceof metatype) return value;
  const body = checkBody(value, metatype);
  const big = bigNestedArrays(metatype, body);
  if (big.length === 0) return decodeCheckedBody(metatype, body);
  const rest: Record<string, unknown> = { ...body };
  for (const key of big) rest[key] = [];
  const instance = plainToDto(metatype, rest) as Record<string, unknown>;
  const sliced = new Map<string, SlicedArray>();
  for (const key of big) {
    const array = await checkItems(nestedClassOf(metatype, key)!, (body as Record<string, unknown[]>)[key]);
    sliced.set(key, array);
    instance[key] = array.witnesses.map((i) => array.items[i]);
  }
  const errors = validateSync(instance, VALIDATOR_OPTIONS);
  for (const [key, array] of sliced) instance[key] = array.items;
  if (errors.length > 0) {
    const first = firstError(errors);
    throw new InvalidRequestError(first?.message ?? 'invalid request', first && mapWitnessPath(first.path, sliced));
  }
  return instance as T;
}

/** Body types that are not DTO classes (`@Body() body: unknown` and primitives): left to ValidationPipe as before. */
const PASS_THROUGH_TYPES: unknown[] = [Object, String, Number, Boolean, Array];

/**
 * The request-body pipe of every route (ARCHITECTURE.md §8): class-validator with `transform` and `whitelist`
 * (unknown fields are dropped silently — Ollama ignores them — never rejected), and an exceptionFactory that throws
 * InvalidRequestError with the first failing property as `param`. It also applies Ollama's body rules before
 * validation (§1.1): no body → `missing request body`; a JSON value that is not an object →
 * `json: cannot unmarshal <kind> into Go value of type <api.Type>`; `null` → an empty request. A DTO body is built
 * by {@link decodeRequestBodySliced} (free-form JSON below a field is kept verbatim, whatever its keys; long arrays
 * of nested DTOs are validated in slices, with the event loop free between them).
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
    return decodeRequestBodySliced(metatype as Type<object>, value);
  }
}
