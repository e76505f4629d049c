export * from './web-ui';
