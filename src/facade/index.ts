export * from './llamad-stream';
export * from './llamad.service';
