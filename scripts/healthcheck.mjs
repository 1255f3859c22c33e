// The containers' healthcheck (Dockerfile HEALTHCHECK, docker-compose.yml): exit 0 when the URL —
// the argument, else HEALTHCHECK_URL, else the API's /readyz on PORT — answers 2xx within 3 s.
// Plain JavaScript with no dependency, so it runs in every image target.
/* global process, fetch, AbortSignal -- Node 20 globals: this file is plain JavaScript, outside the TypeScript projects. */
const url = process.argv[2] ?? process.env.HEALTHCHECK_URL ?? `http://127.0.0.1:${process.env.PORT ?? '3000'}/readyz`;
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
  process.exit(response.ok ? 0 : 1);
} catch {
  process.exit(1);
}
