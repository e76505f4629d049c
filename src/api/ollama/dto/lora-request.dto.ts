// The per-request `lora` field (llama-server's `lora: [{id, scale}]`, tools/server/README.md; plus `name`): beyond
// Ollama, accepted on POST /api/generate, /api/chat, /v1/chat/completions and /v1/completions. Resolved by
// src/generation/lora-selection.ts.
import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsObject, IsOptional, ValidateBy, ValidateNested } from 'class-validator';
import { decodeRequestBody } from '../../../common/http/ollama-validation.pipe';
import { NestedDto } from '../../../common/validation';
import { LoraSelection, MAX_LORA_ENTRIES, MAX_LORA_SCALE } from '../../../generation';

const SHAPE =
  'lora must be an array of {"id": <adapter index>, "scale": <number>} or {"name": <model>, "scale": <number>}';
const ONE_OF = 'each lora entry needs exactly one of "id" (an adapter index of the model) and "name" (a model name)';

/** Whether a JSON field is given (not absent, not null). */
function given(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/** One entry of `lora`: exactly one of `id` and `name`, and `scale`. */
@ApiSchema({ name: 'LoraAdapterRequest' })
export class LoraRequestDto {
  @ApiProperty({
    required: false,
    type: 'integer',
    minimum: 0,
    description: "Index into the requested model's adapters (its Modelfile ADAPTER lines, in order).",
  })
  @ValidateBy(
    {
      name: 'loraId',
      validator: {
        validate: (v: unknown, args) => {
          const named = given((args?.object as LoraRequestDto).name);
          if (!given(v)) return named;
          return !named && typeof v === 'number' && Number.isInteger(v) && v >= 0;
        },
      },
    },
    {
      message: (args) =>
        given(args.value) && !given((args.object as LoraRequestDto).name)
          ? 'lora id must be a non-negative integer'
          : ONE_OF,
    },
  )
  id?: number;

  @ApiProperty({
    required: false,
    type: 'string',
    description: 'A model over the same weights with ADAPTER layers: its adapters are applied.',
  })
  @IsOptional()
  @ValidateBy(
    { name: 'loraName', validator: { validate: (v: unknown) => typeof v === 'string' && v !== '' } },
    { message: 'lora name must be a non-empty string (a model name)' },
  )
  name?: string;

  @ApiProperty({
    type: 'number',
    minimum: -MAX_LORA_SCALE,
    maximum: MAX_LORA_SCALE,
    description: "Multiplier of the adapter's delta; 0 = not applied.",
  })
  @ValidateBy(
    {
      name: 'loraScale',
      validator: {
        validate: (v: unknown) => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= MAX_LORA_SCALE,
      },
    },
    { message: `lora scale must be a number from -${MAX_LORA_SCALE} to ${MAX_LORA_SCALE}` },
  )
  scale!: number;
}

/**
 * The `lora` field of a request DTO: optional, an array of at most {@link MAX_LORA_ENTRIES} {@link LoraRequestDto}
 * (validated item by item; the first failing rule's message is the 400's text, with the path `lora.<i>.<field>`).
 */
export function LoraField(): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray({ message: SHAPE }),
    ArrayMaxSize(MAX_LORA_ENTRIES, { message: `lora may list at most ${MAX_LORA_ENTRIES} entries` }),
    IsObject({ each: true, message: SHAPE }),
    ValidateNested({ each: true }),
    NestedDto(() => LoraRequestDto),
    Type(() => LoraRequestDto),
    ApiProperty({
      required: false,
      type: () => LoraRequestDto,
      isArray: true,
      maxItems: MAX_LORA_ENTRIES,
      description:
        "LoRA adapters for this request instead of the model's own (beyond Ollama; llama-server's per-request " +
        "`lora`): `{id, scale}` indexes the model's ADAPTER layers, `{name, scale}` applies the adapters of another " +
        'model over the same weights; adapters not listed are not applied, `[]` = the base weights.',
    }),
  );
}

/** A DTO holding only `lora`, for dialects whose bodies are not DTOs (the OpenAI layer). */
class LoraHolderDto {
  @LoraField() lora?: LoraRequestDto[];
}

/** Validated `lora` DTO entries → the domain form (null/absent fields dropped). */
export function toLoraSelection(entries: LoraRequestDto[] | undefined | null): LoraSelection[] | undefined {
  if (!entries) return undefined;
  return entries.map((e) => (given(e.name) ? { name: e.name, scale: e.scale } : { id: e.id, scale: e.scale }));
}

/**
 * A raw `lora` value (a JSON body's field, not yet validated) → the domain form, with the native DTO's rules.
 * @returns undefined when absent or null.
 * @throws InvalidRequestError (400) with the first failing rule's message, `param` `lora` or `lora.<i>.<field>`.
 */
export function decodeLora(value: unknown): LoraSelection[] | undefined {
  if (!given(value)) return undefined;
  return toLoraSelection(decodeRequestBody(LoraHolderDto, { lora: value }).lora);
}
