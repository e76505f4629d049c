export * from './output-parser';
