/**
 * Request bodies → DTO instances without walking free-form JSON (issue 23 item 4).
 *
 * class-transformer's `plainToInstance` deep-copies every nested object and, for an object it has no declared type
 * for, takes `value.constructor` as the class to build: a tool schema, a format schema or an options map with a key
 * named `constructor` made it call `new 1()` or read `undefined.prototype` (a TypeError, so a 500 on JSON that Go
 * accepts), and it silently dropped nested keys named `constructor`, `__proto__`, `toString`, `valueOf`, … (a tool
 * schema with such a property lost it). The DTOs here only need their top level (and their nested DTO arrays) turned
 * into instances for class-validator; everything below a field is JSON the services read as is. So this module
 * copies own properties verbatim and recurses only into fields declared with {@link NestedDto}.
 */

type DtoClass = new () => object;

/** Nested DTO classes per DTO class: property → class of each element (arrays) or of the value. */
const NESTED = new WeakMap<object, Map<string, () => DtoClass>>();

/**
 * Declares that a property holds a nested DTO (or an array of them), which {@link plainToDto} turns into instances
 * so that class-validator's `ValidateNested` checks them. Any other property is copied as the JSON it is.
 * @param cls the nested class, lazily (it may be declared later in the file).
 */
export function NestedDto(cls: () => DtoClass): PropertyDecorator {
  return (target: object, property: string | symbol) => {
    const owner = target.constructor;
    let map = NESTED.get(owner);
    if (!map) NESTED.set(owner, (map = new Map()));
    map.set(String(property), cls);
  };
}

/**
 * The nested DTO class of `property` on `cls` or one of its ancestors (declared with {@link NestedDto}); undefined
 * for a free-form field.
 */
export function nestedClassOf(cls: object, property: string): DtoClass | undefined {
  for (let c: object | null = cls; c !== null && c !== Function.prototype; c = Object.getPrototypeOf(c) as object) {
    const found = NESTED.get(c)?.get(property);
    if (found) return found();
  }
  return undefined;
}

/** Whether a value is a JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A DTO instance holding the own enumerable properties of `plain`, each defined as a data property, except keys that
 * name members of `Object.prototype` (`constructor`, `__proto__`, `toString`, `valueOf`…): no DTO has such a field,
 * so they are unknown fields, dropped as Go drops them (below a field, in free-form JSON, they are kept). Values are
 * kept as they are (shared, not copied), except fields declared with {@link NestedDto}: an object there becomes an
 * instance of its class (recursively), an array has each object element converted; other values
 * (a string where an object was expected) are left for the validator to reject with Go's message.
 * @param cls the DTO class (constructed without arguments).
 * @param plain a JSON object (already checked to be one).
 */
export function plainToDto<T extends object>(cls: new () => T, plain: object): T {
  const instance = new cls();
  for (const key of Object.keys(plain)) {
    // No DTO field is named like a member of Object.prototype, and class-validator finds a DTO's rules through
    // `instance.constructor`: such a key at the DTO level is an unknown field, dropped as Go drops unknown fields.
    if (key in Object.prototype) continue;
    let value = (plain as Record<string, unknown>)[key];
    const nested = nestedClassOf(cls, key);
    if (nested) {
      if (Array.isArray(value)) {
        value = value.map((item: unknown) => (isJsonObject(item) ? plainToDto(nested, item) : item));
      } else if (isJsonObject(value)) {
        value = plainToDto(nested, value);
      }
    }
    Object.defineProperty(instance, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return instance;
}
