import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A tiny hospital FHIR R4 server for the FHIR pull tests. It holds the Synthea bundles it is given the
 * way a real server holds them after loading them: every `urn:uuid:` reference is rewritten to
 * `Type/id`. It answers what the pull uses, with paging through `link[relation=next]`:
 *
 * - `GET /Patient/<id>` and `GET /Medication/<id>`;
 * - `GET /Patient/<id>/$everything` (answered 404 `not-supported` when `everything` is false, as
 *   servers without the operation do);
 * - `GET /<Observation|Condition|MedicationStatement|MedicationRequest>?patient=<id>` (also
 *   `Patient/<id>`, and `subject=`).
 */
export interface FhirServer {
  /** The FHIR base address, e.g. `http://127.0.0.1:40123/fhir`. */
  base: string;
  /** Every request received, as `METHOD path?query` relative to the base. */
  requests: string[];
  close(): Promise<void>;
}

type Resource = { resourceType: string; id: string; [member: string]: unknown };

const SEARCHABLE = new Set(['Observation', 'Condition', 'MedicationStatement', 'MedicationRequest']);

function rewriteReferences(value: unknown, byUrn: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteReferences(v, byUrn));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === 'reference' && typeof v === 'string' && byUrn.has(v) ? byUrn.get(v) : rewriteReferences(v, byUrn)]));
}

/** The resources of a Synthea transaction Bundle, as a server stores them. */
function loadBundle(file: string): Resource[] {
  const bundle = JSON.parse(readFileSync(file, 'utf8')) as { entry: { fullUrl?: string; resource: Resource }[] };
  const byUrn = new Map(bundle.entry.filter((e) => e.fullUrl?.startsWith('urn:')).map((e) => [e.fullUrl!, `${e.resource.resourceType}/${e.resource.id}`]));
  return bundle.entry.map((e) => rewriteReferences(e.resource, byUrn) as Resource);
}

function patientOf(resource: Resource): string | undefined {
  const ref = ((resource.subject ?? resource.patient) as { reference?: string } | undefined)?.reference;
  return ref?.startsWith('Patient/') ? ref.slice('Patient/'.length) : undefined;
}

/** `nextLink` rewrites each page's `next` address, to play a server that pages elsewhere or in a circle. */
export async function startFhirServer(files: string[], options: { everything?: boolean; pageSize?: number; nextLink?: (next: string) => string } = {}): Promise<FhirServer> {
  const resources = files.flatMap(loadBundle);
  const pageSize = options.pageSize ?? 50;
  const requests: string[] = [];
  let base = '';

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/fhir+json' });
    res.end(JSON.stringify(body));
  };
  const outcome = (code: string, text: string) => ({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code, diagnostics: text }] });

  /** One page of a searchset; `next` carries the same address with the following `_page`. */
  const page = (url: URL, matches: Resource[]) => {
    const number = Math.max(1, Number(url.searchParams.get('_page') ?? '1'));
    const slice = matches.slice((number - 1) * pageSize, number * pageSize);
    const link = [{ relation: 'self', url: `${base}${url.pathname.replace(/^\/fhir/, '')}${url.search}` }];
    if (number * pageSize < matches.length) {
      const next = new URL(url.href);
      next.searchParams.set('_page', String(number + 1));
      const address = `${base}${next.pathname.replace(/^\/fhir/, '')}${next.search}`;
      link.push({ relation: 'next', url: options.nextLink ? options.nextLink(address) : address });
    }
    return {
      resourceType: 'Bundle', type: 'searchset', total: matches.length, link,
      entry: slice.map((r) => ({ fullUrl: `${base}/${r.resourceType}/${r.id}`, resource: r, search: { mode: 'match' } })),
    };
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fhir.test');
    const path = url.pathname.replace(/^\/fhir/, '');
    requests.push(`${req.method} ${path}${url.search}`);
    if (req.method !== 'GET') return send(res, 405, outcome('not-supported', 'read-only server'));
    const [, type, id, operation] = path.split('/');
    if (id && !operation) {
      const found = resources.find((r) => r.resourceType === type && r.id === id);
      return found ? send(res, 200, found) : send(res, 404, outcome('not-found', `${type}/${id} is not known`));
    }
    if (type === 'Patient' && id && operation === '$everything') {
      if (options.everything === false) return send(res, 404, outcome('not-supported', 'Operation $everything is not supported'));
      const patient = resources.find((r) => r.resourceType === 'Patient' && r.id === id);
      if (!patient) return send(res, 404, outcome('not-found', `Patient/${id} is not known`));
      return send(res, 200, page(url, [patient, ...resources.filter((r) => patientOf(r) === id)]));
    }
    if (!id && type && SEARCHABLE.has(type)) {
      const wanted = (url.searchParams.get('patient') ?? url.searchParams.get('subject') ?? '').replace(/^Patient\//, '');
      if (!wanted) return send(res, 400, outcome('required', 'search by patient only'));
      return send(res, 200, page(url, resources.filter((r) => r.resourceType === type && patientOf(r) === wanted)));
    }
    return send(res, 404, outcome('not-supported', `${path} is not supported`));
  };

  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fhir`;
  return { base, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
