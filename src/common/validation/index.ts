export * from './go-json.decorators';
export * from './wire-fields';
export * from './plain-to-dto';
