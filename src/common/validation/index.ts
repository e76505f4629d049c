export * from './go-json.decorators';
export * from './wire-fields';
