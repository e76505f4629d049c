export * from './option-table';
export * from './option-codec';
