import { ApiSchema, ApiSchemaOptions } from '@nestjs/swagger';
import { OPENAPI_SCHEMAS } from './index';
import { JsonSchema } from './json-schema';

/**
 * One class per hand-written component schema, for `@ApiExtraModels` (the Nest way to register a schema with
 * SwaggerModule): so a host's plain `SwaggerModule.createDocument(app)` resolves every `$ref` of llamad's routes
 * without {@link mergeLlamadOpenApi}. Each class carries its schema as `@ApiSchema` metadata (name and keywords);
 * SwaggerModule starts a model's schema as `{type: 'object', properties: {}}` and lays the metadata over it, so a
 * schema without `type` or `properties` (a union, a string) sets them to undefined, which JSON drops.
 */
const MODELS = new Map<string, new () => object>();

/** The model class of the component schema `name`, made once. @throws Error for a name that is not a schema. */
export function schemaModel(name: string): new () => object {
  let model = MODELS.get(name);
  if (model) return model;
  const schema = OPENAPI_SCHEMAS[name];
  if (!schema) throw new Error(`no OpenAPI component schema named ${name}`);
  model = { [name]: class {} }[name];
  const keywords: JsonSchema = { type: undefined, properties: undefined, ...structuredClone(schema) };
  // ApiSchema's type names `name` and `description` only; SwaggerModule lays every keyword it holds over the schema.
  ApiSchema({ name, ...keywords } as ApiSchemaOptions)(model);
  MODELS.set(name, model);
  return model;
}

/** `names` and every component schema they `$ref`, transitively (each once). */
export function schemaClosure(names: Iterable<string>): string[] {
  const seen = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (typeof node === 'object' && node !== null) {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string') add(value.replace('#/components/schemas/', ''));
        else visit(value);
      }
    }
  };
  const add = (name: string): void => {
    if (seen.has(name) || !(name in OPENAPI_SCHEMAS)) return;
    seen.add(name);
    visit(OPENAPI_SCHEMAS[name]);
  };
  for (const name of names) add(name);
  return [...seen];
}
