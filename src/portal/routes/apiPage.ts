import type Router from '@koa/router';
import { pathSegment } from '../pathSegment.js';
import { createApiKey, KEY_TERMS } from '../../domain/apiKeys/createApiKey.js';
import { listApiKeys } from '../../domain/apiKeys/listApiKeys.js';
import { listReads } from '../../domain/apiKeys/listReads.js';
import { revokeApiKey } from '../../domain/apiKeys/revokeApiKey.js';
import { requireManager, staffAccess, type StaffAccess } from '../../domain/people/staffAccess.js';
import { changeStudySettings } from '../../domain/studies/studySettings.js';
import { addSubscription, enableSubscription, listDeliveries, listSubscriptions, removeSubscription } from '../../domain/webhooks/subscriptions.js';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhooks/webhookEvents.js';
import type { ReadLogRow } from '../../domain/stores.js';
import { createStores, inTransaction } from '../../db/stores.js';
import { isRefusal, statusOf } from '../../errorStatus.js';
import type { Services } from '../../requestState.js';
import { fieldText, formFields } from '../formBody.js';
import { errorDetail, portalText } from '../messages/index.js';
import { pathNumber } from '../pathNumber.js';
import type { PortalContext, PortalState } from '../portalState.js';
import { renderPage } from '../render.js';
import { person, portalActor, signedIn } from '../signedIn.js';
import { resolveHost } from '../../webhookSender.js';

/** The last reads listed at the bottom of the page (interface description, "Audit and read log" 3). */
const READS_SHOWN = 50;
/** The latest webhook deliveries listed on the page. */
const DELIVERIES_SHOWN = 50;

/**
 * The address, below the study's, of the call a read was made with: the read log names its calls for short
 * (`dataset` for one dataset, `fhir_imports` and `fhir_import` for the FHIR reads), and the page shows the call.
 */
function callPathOf(read: ReadLogRow): string {
  const filter = (name: string) => {
    const value = read.filters[name];
    return typeof value === 'string' ? value : '';
  };
  switch (read.operation) {
    case 'dataset': return `datasets/${filter('dataset')}`;
    case 'fhir_imports': return 'fhir';
    case 'fhir_import': return `fhir/${filter('import')}`;
    default: return read.operation;
  }
}

/** What the subscribe form holds, so a refused form comes back as the manager left it. */
interface WebhookForm { url: string; events: string[] }

function webhookFormOf(body: Record<string, unknown>): WebhookForm {
  return { url: fieldText(body.url), events: body.events === undefined ? [] : ([] as unknown[]).concat(body.events).map(String) };
}

/** What the create form holds, so a refused form comes back filled in as the person left it. */
interface KeyForm { name: string; read: boolean; write: boolean; enrol: boolean; sites: string[]; term: number }

const EMPTY_FORM: KeyForm = { name: '', read: false, write: true, enrol: false, sites: [], term: 90 };

function keyFormOf(body: Record<string, unknown>): KeyForm {
  const sites = body.sites === undefined ? [] : ([] as unknown[]).concat(body.sites).map(String);
  return { name: fieldText(body.name), read: body.read === 'on', write: body.write === 'on', enrol: body.enrol === 'on', sites, term: Number(body.term) };
}

/** The study's API page for its managers (issue 7, point 2): keys, the API switch and the last reads. */
export function apiPageRoutes(router: Router<PortalState>, services: Services): void {
  const knex = services.db.knex;

  async function managerAccess(ctx: PortalContext): Promise<StaffAccess> {
    const access = await staffAccess(createStores(knex), person(ctx).id, pathSegment(ctx.params.study));
    requireManager(access);
    return access;
  }

  async function showPage(
    ctx: PortalContext,
    access: StaffAccess,
    extra: { form?: KeyForm; error?: string; switchError?: string; webhookForm?: WebhookForm; webhookError?: string } = {},
    status = 200,
  ) {
    const stores = createStores(knex);
    const actor = portalActor(ctx);
    const [keys, reads, sites, subscriptions, deliveries] = await Promise.all([
      listApiKeys(stores, access.study.code),
      listReads(stores, access.study.code, READS_SHOWN, access.siteIds),
      stores.studies.sites(access.study),
      listSubscriptions(stores, actor, { study: access.study.code }),
      listDeliveries(stores, actor, { study: access.study.code, limit: DELIVERIES_SHOWN }),
    ]);
    const form = extra.form ?? { ...EMPTY_FORM, read: access.canExport, sites: sites.filter((s) => access.managerSiteIds.includes(s.id)).map((s) => s.number) };
    renderPage(ctx, 'apiPage', {
      title: 'api.title', study: access.study, access, keys, reads, callPath: callPathOf, terms: KEY_TERMS,
      sites: sites.filter((s) => access.managerSiteIds.includes(s.id)), form, error: extra.error ?? null, switchError: extra.switchError ?? null,
      // The notice after a revocation names the key only when it is revoked indeed: a crafted link cannot say otherwise.
      revoked: keys.find((k) => String(k.id) === ctx.query.revoked && k.state === 'revoked')?.id ?? null,
      subscriptions, deliveries, eventTypes: WEBHOOK_EVENT_TYPES,
      webhookForm: extra.webhookForm ?? { url: '', events: [] }, webhookError: extra.webhookError ?? null,
    }, status);
  }

  router.get('/p/:study/api', signedIn, async (ctx) => {
    await showPage(ctx, await managerAccess(ctx));
  });

  router.post('/p/:study/api/keys', signedIn, async (ctx) => {
    const access = await managerAccess(ctx);
    const form = keyFormOf(formFields(ctx));
    try {
      const made = await inTransaction(knex, (stores) => createApiKey(stores, {
        study: access.study.code, by: person(ctx).email, name: form.name, canRead: form.read, canWrite: form.write, canEnrol: form.enrol,
        sites: form.sites, termDays: form.term, via: 'portal',
      }));
      // The value is on this one page and nowhere else: it is not stored, and the page is not cached (Cache-Control: no-store).
      renderPage(ctx, 'keyCreated', { title: 'keyCreated.title', study: access.study, access, made, name: form.name.trim() }, 201);
    } catch (error) {
      if (!isRefusal(error)) throw error;
      await showPage(ctx, access, { form, error: errorDetail(ctx.state.lang, error.code, error.params) }, statusOf(error.code));
    }
  });

  router.get('/p/:study/api/keys/:id/revoke', signedIn, async (ctx) => {
    const access = await managerAccess(ctx);
    const keyId = pathNumber(ctx.params.id);
    const key = (await listApiKeys(createStores(knex), access.study.code)).find((k) => k.id === keyId);
    renderPage(ctx, 'revokeKey', { title: 'revoke.title', study: access.study, access, key: key ?? null }, key ? 200 : 404);
  });

  router.post('/p/:study/api/keys/:id/revoke', signedIn, async (ctx) => {
    const access = await managerAccess(ctx);
    const keyId = pathNumber(ctx.params.id);
    await inTransaction(knex, (stores) => revokeApiKey(stores, { study: access.study.code, keyId, by: person(ctx).email, via: 'portal' }));
    ctx.redirect(`/p/${encodeURIComponent(access.study.code)}/api?revoked=${keyId}`);
    ctx.status = 303;
  });

  router.post('/p/:study/api/webhooks', signedIn, async (ctx) => {
    const access = await managerAccess(ctx);
    const form = webhookFormOf(formFields(ctx));
    try {
      const made = await inTransaction(knex, (stores) => addSubscription(stores, portalActor(ctx), { study: access.study.code, url: form.url, events: form.events }, {
        allowInsecure: services.config.webhooksAllowInsecure,
      }, resolveHost));
      // The secret is on this one page; the service keeps it only to sign, and never shows it again.
      renderPage(ctx, 'webhookCreated', { title: 'webhookCreated.title', study: access.study, access, made }, 201);
    } catch (error) {
      if (!isRefusal(error)) throw error;
      await showPage(ctx, access, { webhookForm: form, webhookError: errorDetail(ctx.state.lang, error.code, error.params) }, statusOf(error.code));
    }
  });

  router.post('/p/:study/api/webhooks/:id/:action', signedIn, async (ctx) => {
    const access = await managerAccess(ctx);
    const id = pathNumber(ctx.params.id);
    const input = { study: access.study.code, id };
    if (ctx.params.action === 'remove') await inTransaction(knex, (stores) => removeSubscription(stores, portalActor(ctx), input));
    else if (ctx.params.action === 'enable') await inTransaction(knex, (stores) => enableSubscription(stores, portalActor(ctx), input));
    else ctx.throw(404);
    ctx.redirect(`/p/${encodeURIComponent(access.study.code)}/api#webhooks`);
    ctx.status = 303;
  });

  router.post('/p/:study/api/switch', signedIn, async (ctx) => {
    const access = await managerAccess(ctx);
    const fields = formFields(ctx);
    const wanted = fields.api;
    // Off stops every system of the study at once: only with the box ticked, whatever sent the form.
    if (wanted === 'off' && fields.confirm !== 'yes') {
      await showPage(ctx, access, { switchError: portalText(ctx.state.lang, 'api.turnOffUnconfirmed') }, 400);
      return;
    }
    if (wanted === 'on' || wanted === 'off') {
      await inTransaction(knex, (stores) => changeStudySettings(stores, portalActor(ctx), access.study.code, { apiEnabled: wanted === 'on' }));
    }
    ctx.redirect(`/p/${encodeURIComponent(access.study.code)}/api`);
    ctx.status = 303;
  });
}
