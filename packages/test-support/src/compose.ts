import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

const root = new URL('../../../', import.meta.url);

export interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  secrets?: string[];
  healthcheck?: { test?: string[]; disable?: boolean };
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
  build?: { context: string; target: string };
  image?: string;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  secrets: Record<string, { file: string }>;
}

/** docker-compose.yml, parsed (with its `<<:` merges) — no Docker engine here to ask. */
export function composeFile(): ComposeFile {
  return parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), { merge: true }) as ComposeFile;
}

/**
 * A service's environment as its container sees it: each `/run/secrets/<name>` a service is given
 * pointed at the secret's file in this repository (what compose mounts there). A path to a secret
 * the service was not given stays as it is, so the app fails to read it, as it would in the container.
 */
export function composeEnvironment(compose: ComposeFile, service: string): Record<string, string> {
  const s = compose.services[service]!;
  const given = new Set(s.secrets ?? []);
  return Object.fromEntries(
    Object.entries(s.environment ?? {}).map(([name, value]) => {
      const secret = /^\/run\/secrets\/(.+)$/.exec(value)?.[1];
      return [
        name,
        secret && given.has(secret) && compose.secrets[secret]
          ? new URL(compose.secrets[secret].file, root).pathname
          : value,
      ];
    }),
  );
}

/** A secret's content, as the container reads it (the file, without its final newline). */
export function composeSecret(compose: ComposeFile, name: string): string {
  return readFileSync(new URL(compose.secrets[name]!.file, root), 'utf8').replace(/\r?\n$/, '');
}
