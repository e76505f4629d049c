export * from './models.module';
export * from './models.service';
export * from './model-name';
export * from './model.types';
export * from './modelfile.parser';
export * from './manifest';
export * from './model-store.repository';
