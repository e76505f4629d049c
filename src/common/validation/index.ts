export * from './go-json.decorators';
