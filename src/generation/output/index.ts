export * from './output-parser';
export * from './native-output-parser';
