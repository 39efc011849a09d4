/**
 * Lens operations (docs/spec.md "Lenses", docs/design.md §8): one core function per operation, shared
 * by the REST routes and the MCP tools.
 *
 * - `lensTree`: the view tree (the `format=json` body and the `render_lens` tool text).
 * - `listLenses`: the lenses one can render (`render_lens` without a lens id, GET /v1/lens).
 * - `renderLens`: the `render_lens` tool: the catalog or one view tree.
 * - `renderLensPage`: the REST render adapter: the ticket exchange (302 + cookie) and the
 *   html / text / json renderings of `lensTree`.
 * - `mintRenderTicket`: POST /v1/lens/{id}/ticket.
 */
import { errors } from '../../kernel/errors.js';
import { parseExpiry } from '../../kernel/expiry.js';
import type { NodeRecord } from '../../kernel/graph-index.js';
import type { Static } from '../../kernel/operation.js';
import { RawResponse, serialize, type OpContext } from '../../kernel/plugin.js';
import type { Catalog, MintRenderTicketInput, RenderLensInput, RenderLensPageInput, RenderTicket } from './api.js';
import { checkParams, parseLens, resolveQuery, type LensDef } from './definition.js';
import { HTML_CSP, renderHtml, renderText } from './render.js';
import { grantOf, signTicket, ticketCookie, TICKET_DEFAULT_DAYS, TICKET_MAX_DAYS, verifyTicket, type TicketClaims } from './tickets.js';
import { buildView, type BuiltView, type LensTree, type Sharer } from './view.js';

/** The lens node, 404 when the id names nothing or something that is not a lens. */
export function lensRecord(ctx: OpContext, id: string): NodeRecord {
  const record = ctx.tenant.index.get(id);
  if (!record || record.type !== 'lens') throw errors.notFound(`lens ${id}`);
  return record;
}

function sharerOf(ctx: OpContext, claims: TicketClaims): Sharer {
  const person = ctx.tenant.index.get(claims.sharer);
  const name = person?.type === 'person' ? String(person.frontmatter.name ?? person.title) : claims.sharer;
  return { id: claims.sharer, name, expires: new Date(claims.expMs).toISOString(), ...(claims.label ? { label: claims.label } : {}) };
}

/**
 * The params a render uses. Through a ticket they are the ones pinned at mint (over the lens
 * defaults): a viewer may repeat them but not change them, so a share cannot be widened.
 */
function renderParams(
  ctx: OpContext,
  lens: LensDef,
  supplied: Record<string, unknown>,
): { params: Record<string, string>; sharer?: Sharer } {
  const grant = grantOf(ctx.actor);
  if (!grant) return { params: checkParams(lens, supplied) };
  const pinned = grant.claims.params;
  for (const [name, value] of Object.entries(checkParams(lens, supplied))) {
    if (value !== (pinned[name] ?? lens.defaults[name] ?? '')) {
      throw errors.forbidden(`param.${name} is fixed by the render ticket`, {
        field: `param.${name}`,
        pinned: pinned[name] ?? lens.defaults[name] ?? '',
      });
    }
  }
  return { params: pinned, sharer: sharerOf(ctx, grant.claims) };
}

function build(ctx: OpContext, id: string, supplied: Record<string, unknown>): BuiltView & { lens: LensDef } {
  const lens = parseLens(lensRecord(ctx, id));
  const { params, sharer } = renderParams(ctx, lens, supplied);
  const query = resolveQuery(lens, ctx.tenant.registry, params);
  const view = buildView(ctx.tenant, lens, query, {
    me: ctx.actor.bound ? ctx.actor.personId : null,
    nowMs: ctx.services.clock.now(),
    ...(sharer ? { sharer } : {}),
  });
  return { ...view, lens };
}

/** The view tree of one lens. Read-only. */
export async function lensTree(ctx: OpContext, id: string, params: Record<string, unknown>): Promise<LensTree> {
  return build(ctx, id, params).tree;
}

/** The whole match set as well as the tree: apply_lens_action checks membership against it. */
export function lensView(ctx: OpContext, id: string, params: Record<string, unknown>): BuiltView & { lens: LensDef } {
  return build(ctx, id, params);
}

type CatalogEntry = Static<typeof Catalog>['lenses'][number];

/** Every lens not retired, by id. A lens with a broken definition is listed with its errors. */
export async function listLenses(ctx: OpContext): Promise<Static<typeof Catalog>> {
  const { index, registry } = ctx.tenant;
  const lenses: CatalogEntry[] = [];
  for (const id of [...index.idsOfType('lens')].sort()) {
    const record = index.get(id)!;
    if (registry.isTerminal('lens', record.status)) continue;
    const base = { id, title: record.title, summary: String(record.frontmatter.summary ?? ''), status: record.status };
    try {
      const def = parseLens(record);
      lenses.push({
        ...base,
        params: def.defaults,
        param_names: def.paramNames,
        columns: def.columns,
        group_by: def.groupBy,
        actions: def.actions,
        valid: true,
      });
    } catch (err) {
      const details = (err as { details?: { errors?: unknown[] } }).details;
      lenses.push({
        ...base,
        params: {},
        param_names: [],
        columns: null,
        group_by: null,
        actions: null,
        valid: false,
        errors: details?.errors ?? [],
      });
    }
  }
  return { lenses, count: lenses.length };
}

/** `render_lens`: the catalog without a lens id, else the view tree. */
export async function renderLens(ctx: OpContext, input: Static<typeof RenderLensInput>): Promise<LensTree | Static<typeof Catalog>> {
  if (input.lens_id === undefined) {
    if (input.params !== undefined)
      throw errors.validation('params need a lens_id', [{ field: 'params', message: 'render params apply to one lens' }]);
    return listLenses(ctx);
  }
  return lensTree(ctx, input.lens_id, input.params ?? {});
}

// ---------------------------------------------------------------- REST render

/** The render URL as requested, minus the ticket (so the ticket leaves the address bar and logs). */
function locationWithoutTicket(input: Static<typeof RenderLensPageInput>): string {
  const search = new URLSearchParams();
  if (input.format !== undefined) search.append('format', input.format);
  for (const [name, value] of Object.entries(input.params ?? {})) search.append(`param.${name}`, value);
  const qs = search.toString();
  return `/v1/lens/${input.id}/render${qs ? `?${qs}` : ''}`;
}

const COMMON_HEADERS = {
  'cache-control': 'private, no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * GET /v1/lens/{id}/render. A `ticket` query parameter is never rendered: it is exchanged
 * by a 302 to the same URL without it, setting the HttpOnly `svc_render_ticket` cookie the
 * render then authenticates with.
 */
export async function renderLensPage(ctx: OpContext, input: Static<typeof RenderLensPageInput>): Promise<RawResponse> {
  const id = input.id;
  const ticket = input.ticket;
  if (ticket !== undefined) {
    const grant = grantOf(ctx.actor);
    // A bearer request carrying a ticket too: the ticket still has to be a live one for this lens.
    const claims = grant?.source === 'query' ? grant.claims : (await verifyTicket(ctx.services, ticket, id))?.claims;
    if (!claims || claims.org !== ctx.tenant.org) throw errors.unauthorized();
    const maxAge = Math.floor((claims.expMs - ctx.services.clock.now()) / 1000);
    return new RawResponse(
      302,
      { ...COMMON_HEADERS, location: locationWithoutTicket(input), 'set-cookie': ticketCookie(ctx.services, id, ticket, maxAge) },
      null,
    );
  }
  const format = input.format ?? 'html';
  const tree = await lensTree(ctx, id, input.params ?? {});
  if (format === 'json')
    return new RawResponse(200, { ...COMMON_HEADERS, 'content-type': 'application/json; charset=utf-8' }, serialize(tree));
  if (format === 'text')
    return new RawResponse(200, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8' }, renderText(ctx.tenant, tree));
  return new RawResponse(
    200,
    { ...COMMON_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-security-policy': HTML_CSP, 'x-frame-options': 'DENY' },
    renderHtml(ctx.tenant, tree),
  );
}

// ---------------------------------------------------------------- tickets

/** POST /v1/lens/{id}/ticket: a signed, read-only, render-only share link for the caller's person. */
export async function mintRenderTicket(ctx: OpContext, input: Static<typeof MintRenderTicketInput>): Promise<Static<typeof RenderTicket>> {
  const id = input.id;
  if (!ctx.actor.bound) throw errors.noPerson('minting a render ticket needs a token bound to a person node (the ticket names its sharer)');
  const lens = parseLens(lensRecord(ctx, id));
  const nowMs = ctx.services.clock.now();
  const expires = parseExpiry(input.expires, { nowMs, defaultDays: TICKET_DEFAULT_DAYS, maxDays: TICKET_MAX_DAYS });
  const label = input.label;
  const params = checkParams(lens, input.params ?? {});
  resolveQuery(lens, ctx.tenant.registry, params); // a param value that could never render is refused now
  const expMs = Math.floor(Date.parse(expires) / 1000) * 1000;
  const ticket = await signTicket(
    ctx.tenant,
    { org: ctx.tenant.org, lens: id, sharer: ctx.actor.personId, params, label: label ?? null, expMs },
    nowMs,
  );
  const appUrl = ctx.services.config.appUrl?.replace(/\/+$/, '');
  const url = appUrl ? `${appUrl}/views/${id}?ticket=${ticket}` : `/v1/lens/${id}/render?ticket=${ticket}`;
  return {
    ticket,
    url,
    lens_id: id,
    sharer_person_id: ctx.actor.personId,
    exp: new Date(expMs).toISOString(),
    ...(label ? { label } : {}),
    ...(Object.keys(params).length > 0 ? { params } : {}),
  };
}
