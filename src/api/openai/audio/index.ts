export * from './audio.controller';
export * from './audio-file';
export * from './multipart-form';
export * from './transcription-format';
export * from './transcription-request';
export * from './transcription.service';
