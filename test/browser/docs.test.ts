import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import type { Page } from 'playwright-core';
import type { Problem } from '../helpers/answerTypes.js';
import { present } from '../helpers/only.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';
import { openBrowser, SCREENSHOTS, type Browser } from './browser.js';

interface Parameter { name?: string; $ref?: string }
type Examples = Record<string, { summary?: string; $ref?: string }>;
interface Content { content?: Record<string, { examples?: Examples }> }
interface Operation { operationId: string; summary: string; parameters?: Parameter[]; requestBody?: Content; responses: Record<string, Content & { $ref?: string }> }
interface Spec {
  paths: Record<string, Record<string, unknown> & { parameters?: Parameter[] }>;
  webhooks: Record<string, Record<string, unknown> & { parameters?: Parameter[] }>;
  components: {
    schemas: Record<string, unknown>;
    parameters: Record<string, { name: string }>;
    responses: Record<string, Content>;
    examples: Record<string, { summary?: string }>;
  };
}

const spec = yaml.load(readFileSync('spec/openapi.yaml', 'utf8')) as Spec;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const lastSegment = (ref: string): string => ref.split('/').pop()!;
const parameterName = (p: Parameter): string => (p.$ref ? present(spec.components.parameters[lastSegment(p.$ref)], p.$ref).name : p.name!);

/** The label Swagger UI gives an example in its menu: its summary, or else its name. */
function exampleLabels(examples: Examples = {}): string[] {
  return Object.entries(examples).map(([name, e]) => (e.$ref ? present(spec.components.examples[lastSegment(e.$ref)], e.$ref).summary : e.summary) ?? name);
}

/** Every operation of the spec, its webhooks (the events it sends) included, with the names of all its parameters, the path's own included. */
const operations = [...Object.values(spec.paths), ...Object.values(spec.webhooks)].flatMap((item) =>
  METHODS.filter((m) => item[m]).map((m) => {
    const op = item[m] as Operation;
    return { op, parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])].map(parameterName) };
  }));

/** A ceiling, not a measurement: how long the page may take to lay itself out before the test gives up. */
const RENDERING = 150_000;

describe('getApiDocs in Chromium', function () {
  this.timeout(RENDERING + 30_000);
  let app: TestApp;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async () => {
    app = await startTestApp();
    browser = await openBrowser();
    page = browser.page;
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    // Anything the page asks of another origin would fail on a hospital network, and is a CDN we promised not to use.
    page.on('request', (r) => { if (!r.url().startsWith(app.baseUrl) && !r.url().startsWith('data:')) problems.push(`foreign request: ${r.url()}`); });
    const response = await page.goto(`${app.baseUrl}/api/v1/docs`);
    expect(response?.status()).to.equal(200);
    // Swagger UI lays out every operation open, which takes a few seconds of CPU (much more on a busy machine).
    await page.locator('.opblock').nth(operations.length - 1).waitFor({ timeout: RENDERING });
    await page.locator('section.models').waitFor({ timeout: RENDERING });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders every operation and every webhook of the spec with its summary, every parameter and every response status', async () => {
    const shown = await page.locator('.opblock .opblock-summary-operation-id').allTextContents();
    expect(shown.map((s) => s.trim())).to.have.members(operations.map((o) => o.op.operationId));
    for (const { op, parameters } of operations) {
      const block = page.locator(`.opblock:has(.opblock-summary-operation-id:text-is("${op.operationId}"))`);
      const names = (await block.locator('.parameters .parameter__name').allTextContents()).map((n) => n.replace(/\*/g, '').trim());
      expect(names, `parameters of ${op.operationId}`).to.have.members(parameters);
      expect((await block.locator('.opblock-summary-description').innerText()).trim(), `summary of ${op.operationId}`).to.equal(op.summary);
      const text = await block.innerText();
      for (const status of Object.keys(op.responses)) expect(text, `${op.operationId} response ${status}`).to.match(new RegExp(`^${status}\\b`, 'm'));
    }
  });

  it('lists every schema of the spec and opens one to its properties', async () => {
    const schemas = page.locator('section.models article[data-json-schema-level="0"]');
    const names = (await schemas.locator(':scope > .json-schema-2020-12-head .json-schema-2020-12__title').allTextContents()).map((n) => n.trim());
    expect(names).to.have.members(Object.keys(spec.components.schemas));
    const recordInput = schemas.filter({ has: page.locator(':scope > .json-schema-2020-12-head .json-schema-2020-12__title', { hasText: /^RecordInput$/ }) });
    await recordInput.locator(':scope > .json-schema-2020-12-head .json-schema-2020-12-expand-deep-button').click();
    const opened = await recordInput.innerText();
    for (const member of ['subject', 'visit', 'form', 'values', 'not_done', 'tables', 'instance', 'status', 'update']) expect(opened).to.contain(member);
  });

  it('offers every named example of every response and request body, and shows the selected one', async () => {
    const options = (await page.locator('select option').allTextContents()).map((o) => o.trim());
    for (const { op } of operations) {
      for (const [status, declared] of Object.entries(op.responses)) {
        const response = declared.$ref ? present(spec.components.responses[lastSegment(declared.$ref)], declared.$ref) : declared;
        for (const media of Object.values(response.content ?? {})) {
          for (const label of exampleLabels(media.examples)) expect(options, `${op.operationId} ${status}: ${label}`).to.include(label);
        }
      }
      // A request body shows the examples of the media type chosen in its menu, the first one at first.
      const first = Object.values(op.requestBody?.content ?? {})[0];
      for (const label of exampleLabels(first?.examples)) expect(options, `${op.operationId} request: ${label}`).to.include(label);
    }
    const design = page.locator('.opblock:has(.opblock-summary-operation-id:text-is("getStudyDesign")) .responses-wrapper .example').first();
    expect(await design.innerText()).to.contain('"subject_format"');
  });

  it('serves the page and its files itself; an unknown file gives 404 not_found, a malformed name 400', async () => {
    const html = await app.call('GET', '/api/v1/docs');
    expect(html.status).to.equal(200);
    expect(html.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    const assets = [...String(html.body).matchAll(/(?:href|src)="(\/api\/v1\/docs\/assets\/[^"]+)"/g)].map((m) => m[1] ?? '');
    expect(assets).to.have.members(['/api/v1/docs/assets/swagger-ui.css', '/api/v1/docs/assets/swagger-ui-bundle.js', '/api/v1/docs/assets/docs.js']);
    for (const asset of assets) {
      const file = await app.call('GET', asset);
      expect(file.status, asset).to.equal(200);
      expect(file.headers.get('content-type'), asset).to.match(asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect(file.headers.get('cache-control'), asset).to.equal('public, max-age=3600');
      expect(String(file.body).length, asset).to.be.above(100);
    }
    const unknown = await app.call<Problem>('GET', '/api/v1/docs/assets/package.json');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.code).to.equal('not_found');
    const malformed = await app.call<Problem>('GET', '/api/v1/docs/assets/..%2Fpackage.json');
    expect(malformed.status).to.equal(400);
    expect(malformed.body.errors?.[0]?.pointer).to.equal('/path/file');
  });

  it('loads only its own files, under its own content security policy, without an error', async () => {
    const response = await page.request.get(`${app.baseUrl}/api/v1/docs`);
    expect(response.headers()['content-security-policy']).to.contain("script-src 'self'").and.not.contain('unsafe-eval');
    // The whole page is tens of thousands of pixels tall: the top of it, and one operation in full.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SCREENSHOTS, 'api-docs.png') });
    await page.locator('.opblock:has(.opblock-summary-operation-id:text-is("submitFormRecords"))').screenshot({ path: join(SCREENSHOTS, 'api-docs-submitFormRecords.png') });
    expect(problems).to.deep.equal([]);
  });
});
