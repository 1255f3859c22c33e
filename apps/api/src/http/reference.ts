/**
 * The API's reference, served by the API itself at `/docs`, no key needed: the OpenAPI document
 * rendered by Swagger UI (swagger-ui-dist, its assets served from here: the page loads nothing from
 * another site), the document itself (`/docs/openapi.yaml`, `/docs/openapi.json`), and the error codes
 * (`/docs/errors`, docs/errors.md rendered; each code's row is the anchor an error's `docUrl` names).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { Router, type Response } from 'express';
import { marked } from 'marked';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { parse } from 'yaml';
import { escapeHtml } from './html.ts';

export const DOCS_PATH = '/docs';

/** Where an error code is explained: its row on the served errors page. */
export function errorDocPath(code: string): string {
  return `${DOCS_PATH}/errors#${code}`;
}

const SPEC_FILE = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));
const ERRORS_FILE = fileURLToPath(new URL('../../../../docs/errors.md', import.meta.url));

/** Swagger UI renders with inline styles and data: images; every script is a file from here. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

const ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png'];

function page(res: Response, title: string, head: string, body: string): void {
  res
    .set('Content-Security-Policy', CSP)
    .type('html')
    .send(
      `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="${DOCS_PATH}/assets/favicon-32x32.png">${head}</head>
<body>${body}</body></html>`,
    );
}

/** docs/errors.md as HTML, each code's table row carrying the code as its id. */
function errorsHtml(markdown: string): string {
  const html = marked.parse(markdown, { async: false });
  return html.replace(/<tr>\s*<td><code>([a-z_]+)<\/code><\/td>/g, '<tr id="$1"><td><code>$1</code></td>');
}

/** The files, read once per process (every organization's app in platform mode shares them). */
let files: { yaml: string; json: string; errors: string; assets: string } | undefined;
function referenceFiles() {
  if (!files) {
    const yaml = readFileSync(SPEC_FILE, 'utf8');
    files = {
      yaml,
      json: JSON.stringify(parse(yaml)),
      errors: errorsHtml(readFileSync(ERRORS_FILE, 'utf8')),
      assets: dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')),
    };
  }
  return files;
}

export function referenceRoutes(): Router {
  const router = Router();
  const { yaml, json, errors, assets } = referenceFiles();

  router.get('/', (_req, res) => {
    page(
      res,
      'Timbra API reference',
      `<link rel="stylesheet" href="${DOCS_PATH}/assets/swagger-ui.css">`,
      `<header style="font:14px system-ui,sans-serif;padding:8px 20px"><a href="${DOCS_PATH}/errors">Error codes</a> ·
<a href="${DOCS_PATH}/openapi.yaml">openapi.yaml</a></header>
<main id="reference"></main>
<script src="${DOCS_PATH}/assets/swagger-ui-bundle.js"></script>
<script src="${DOCS_PATH}/init.js"></script>`,
    );
  });
  router.get('/init.js', (_req, res) => {
    res.type('text/javascript').send(
      `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(`${DOCS_PATH}/openapi.json`)}, dom_id: '#reference',
  deepLinking: true, tryItOutEnabled: false, validatorUrl: null });\n`,
    );
  });
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(json);
  });
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml; charset=utf-8').send(yaml);
  });
  router.get('/errors', (_req, res) => {
    page(
      res,
      'Timbra API errors',
      `<style>body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 20px;color:#1f2328}
table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:6px 8px;vertical-align:top;text-align:left}
tr:target{background:#fff8c5}code{background:#f6f8fa;padding:0 3px}pre{background:#f6f8fa;padding:12px;overflow:auto}</style>`,
      `<p><a href="${DOCS_PATH}">API reference</a></p><main>${errors}</main>`,
    );
  });
  router.use('/assets', (req, res, next) => {
    if (!ASSETS.includes(req.path.slice(1))) {
      next();
      return;
    }
    res.set('Cache-Control', 'public, max-age=86400');
    express.static(assets, { index: false, fallthrough: false })(req, res, next);
  });
  return router;
}
