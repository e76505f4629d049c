export * from './options';
export * from './option-caps';
