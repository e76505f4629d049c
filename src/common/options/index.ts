export * from './option-table';
export * from './option-codec';
export * from './rpc-servers';
