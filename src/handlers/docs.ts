import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DomainError } from '../domain/errors.js';
import type { OperationHandler } from './types.js';

/**
 * The API reference page (`getApiDocs`): Swagger UI from the npm package swagger-ui-dist, served by the
 * service itself so the page works on a hospital network without internet access (no CDN).
 */

const ASSETS = '/api/v1/docs/assets';

/**
 * The page's own policy, looser than the service's `default-src 'none'`: Swagger UI needs its scripts and
 * style sheet from here, inline style attributes, data: images (its icons) and a fetch of the contract.
 * Nothing may come from another origin.
 */
const PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Study Data Exchange API reference</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="${ASSETS}/swagger-ui.css">
</head>
<body>
  <noscript>This page needs JavaScript. The same description is at /api/v1/openapi.json.</noscript>
  <div id="swagger-ui"></div>
  <script src="${ASSETS}/swagger-ui-bundle.js"></script>
  <script src="${ASSETS}/docs.js"></script>
</body>
</html>
`;

// Every operation and the schemas are shown open. "Try it out" is off: the page is a reference, and a
// key typed into a web page to send clinical data is exactly what the API keys are meant to avoid.
// Swagger UI 5 shows a path's own `parameters` (our `study_code`) as an empty row instead of the
// parameter (swagger-ui issues #4327 and #8971). They apply to every operation of the path, so the page
// copies them into each operation first, which is the same contract said another way.
const INIT = `fetch('/api/v1/openapi.json').then((response) => response.json()).then((spec) => {
  const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  const resolved = (p) => (p.$ref ? spec.components.parameters[p.$ref.split('/').pop()] : p);
  for (const item of Object.values(spec.paths)) {
    const shared = item.parameters || [];
    delete item.parameters;
    for (const method of methods) {
      const operation = item[method];
      if (!operation) continue;
      const own = operation.parameters || [];
      const overridden = (p) => own.some((o) => resolved(o).name === resolved(p).name && resolved(o).in === resolved(p).in);
      operation.parameters = [...shared.filter((p) => !overridden(p)), ...own];
    }
  }
  window.ui = SwaggerUIBundle({
    spec,
    dom_id: '#swagger-ui',
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    deepLinking: true,
    displayOperationId: true,
    docExpansion: 'full',
    defaultModelsExpandDepth: 1,
    defaultModelExpandDepth: 3,
    showExtensions: true,
    supportedSubmitMethods: [],
    validatorUrl: null,
  });
});
`;

interface Asset {
  type: string;
  read: () => string;
}

const swaggerUiFolder = (): string => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const ASSET_FILES: Record<string, Asset> = {
  // The source map is not served, so its reference is dropped rather than left to 404 in a browser's tools.
  'swagger-ui.css': {
    type: 'text/css; charset=utf-8',
    read: () => readFileSync(join(swaggerUiFolder(), 'swagger-ui.css'), 'utf8').replace(/\/\*# sourceMappingURL=[^*]*\*\/\s*$/, ''),
  },
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', read: () => readFileSync(join(swaggerUiFolder(), 'swagger-ui-bundle.js'), 'utf8') },
  'docs.js': { type: 'text/javascript; charset=utf-8', read: () => INIT },
};

/** Read once, on first use: the bundle is 1.7 MB and the service should not pay for it at start-up. */
const loaded = new Map<string, string>();

export const getApiDocs: OperationHandler<'getApiDocs'> = () => Promise.resolve({
  status: 200,
  body: PAGE,
  headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': PAGE_POLICY },
});

export const getApiDocsAsset: OperationHandler<'getApiDocsAsset'> = (c) => {
  const name = c.request.params.file;
  const asset = Object.hasOwn(ASSET_FILES, name) ? ASSET_FILES[name] : undefined;
  if (!asset) throw new DomainError('not_found');
  let body = loaded.get(name);
  if (body === undefined) {
    body = asset.read();
    loaded.set(name, body);
  }
  return Promise.resolve({ status: 200 as const, body, headers: { 'Content-Type': asset.type, 'Cache-Control': 'public, max-age=3600' } });
};
