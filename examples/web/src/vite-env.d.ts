/// <reference types="vite/client" />

interface ImportMetaEnv {
  readonly VITE_SERVICE_URL?: string;
  readonly VITE_TOKEN?: string;
  readonly VITE_QUIZ_ID?: string;
  readonly VITE_PROTOCOL?: string;
}

interface ImportMeta {
  readonly env: ImportMetaEnv;
}
