/**
 * The lenses plugin's operations, each declared once: input and answer schemas, error
 * statuses, and the function that runs it (operations.ts, actions.ts). Routes, tools and
 * the OpenAPI document all read these.
 *
 * The render route takes its render params as query keys `param.<name>=<value>` (docs/design.md §8);
 * the route's `queryPrefixes` gathers them into the `params` property.
 */
import { answer, defineOperation, NodeId, object, s } from '../../kernel/operation.js';
import * as actions from './actions.js';
import { ACTION_NAMES } from './definition.js';
import * as ops from './operations.js';

const nullableString = s.stringOrNull();

/** Render params by name; the lens decides which names it takes and what values are allowed. */
const Params = s.record(
  s.union([s.raw<string | number | boolean>({ type: ['string', 'number', 'boolean'] }), s.array(s.string())]),
  "render params by name (the lens's `$name` references), e.g. {project: 'web'}",
);
const LensId = { ...NodeId, description: 'lens node id, e.g. lens-open-work' };
const StringMap = s.record(s.string());

export const LensTree = answer(
  {
    lens_id: s.string(),
    title: s.string(),
    generated_at: s.string(),
    params: StringMap,
    sharer: answer({ id: s.string(), name: s.string(), expires: s.string(), label: s.string() }, ['id', 'name', 'expires']),
    groups: s.array(
      answer({ key: s.any(), count: s.integer(), items: s.array(answer({ id: s.string(), title: s.string() }, ['id'])) }, [
        'count',
        'items',
      ]),
    ),
    count: s.integer(),
    total: s.integer(),
    truncated: s.boolean(),
    columns: s.array(s.string()),
    group_by: s.any(),
    sort: s.array(s.string()),
  },
  ['lens_id', 'title', 'generated_at', 'params', 'groups', 'count'],
);

export const Catalog = answer({
  lenses: s.array(
    answer(
      {
        id: s.string(),
        title: s.string(),
        summary: s.string(),
        status: s.string(),
        params: StringMap,
        param_names: s.array(s.string()),
        columns: s.nullable(s.array(s.string())),
        group_by: nullableString,
        actions: s.nullable(s.array(s.string())),
        valid: s.boolean(),
        errors: s.array(s.any()),
      },
      ['id', 'title', 'summary', 'status', 'params', 'param_names', 'columns', 'group_by', 'actions', 'valid'],
    ),
  ),
  count: s.integer(),
});

export const listLenses = defineOperation({
  name: 'list_lenses',
  summary: 'The lenses one can render, with their params and columns',
  description:
    'Every lens that is not retired, by id, with its param defaults, columns, grouping and actions. A lens with a broken definition is listed with valid:false and its errors.',
  input: object({}),
  output: Catalog,
  run: ops.listLenses,
});

export const RenderLensPageInput = object(
  {
    id: LensId,
    format: s.enum(['html', 'text', 'json'], 'html (default), text, or json (the raw view tree)'),
    ticket: s.string('a render ticket, exchanged by a 302 for the svc_render_ticket cookie'),
    params: s.record(s.string(), 'render params: on the wire, the query keys param.<name>=<value>'),
  },
  ['id'],
);

export const renderLensPage = defineOperation({
  name: 'render_lens_page',
  summary: 'Render a lens as html (default), text or json',
  description:
    'Render a saved view. `format` html (default), text or json (the raw view tree). Render params are the query keys `param.<name>=<value>` (a repeated key joins into a list); through a render ticket they are fixed at mint (403 when changed). A `ticket` query parameter is exchanged once by a 302 for the HttpOnly `svc_render_ticket` cookie, so the ticket leaves the URL.',
  input: RenderLensPageInput,
  output: LensTree,
  produces: ['text/html', 'text/plain', 'application/json'],
  redirects: [302],
  errors: [403],
  run: ops.renderLensPage,
});

export const MintRenderTicketInput = object(
  {
    id: LensId,
    expires: s.string("'<N>d' or an ISO date; default 7d, at most 30d"),
    label: s.string('shown with the share (one line, at most 200 characters)', { maxLength: 200, pattern: '^[^\\r\\n]*$' }),
    params: { ...Params, description: 'render params pinned for the viewer' },
  },
  ['id'],
);

export const RenderTicket = answer(
  {
    ticket: s.string(),
    url: s.string(),
    lens_id: s.string(),
    sharer_person_id: s.string(),
    exp: s.string(),
    label: s.string(),
    params: StringMap,
  },
  ['ticket', 'url', 'lens_id', 'sharer_person_id', 'exp'],
);

export const mintRenderTicket = defineOperation({
  name: 'mint_render_ticket',
  summary: 'Mint a read-only, render-only share link for a lens',
  description:
    "A signed, read-only, render-only share link naming the caller's person as sharer. `expires` is `<N>d` or an ISO date, default 7d, maximum 30d; `params` are pinned for the viewer; `label` is shown in the banner. The caller must be bound to a person node (422 no_person).",
  input: MintRenderTicketInput,
  output: RenderTicket,
  example: { expires: '7d', label: 'for the weekly review' },
  run: ops.mintRenderTicket,
});

export const RenderLensInput = object({ lens_id: LensId, params: Params });

export const renderLens = defineOperation({
  name: 'render_lens',
  summary: 'Render a saved view (lens), or list the lenses',
  description:
    'Render a saved view (lens): {lens_id, params?} returns the view tree {lens_id, title, generated_at, params, groups: [{key, count, items: [{id, title, ...columns}]}], count}; with no lens_id, the catalog of lenses with their params and columns. Read-only.',
  input: RenderLensInput,
  output: s.union([LensTree, Catalog]),
  run: ops.renderLens,
});

export const ApplyLensActionInput = object(
  {
    lens_id: LensId,
    item_id: { ...NodeId, description: 'id of an item of the rendered lens' },
    action: s.enum(ACTION_NAMES),
    value: s.stringOrNull('the new status or priority'),
    params: Params,
  },
  ['lens_id', 'item_id', 'action'],
);

export const applyLensAction = defineOperation({
  name: 'apply_lens_action',
  summary: 'Act on an item of a rendered lens',
  description:
    'Act on an item of a rendered lens: action set_status (value: a status), set_priority (value: p1/p2/p3 or none), claim or release (no value). The item must be in the lens as it renders with the same params; the lens may restrict its actions. Runs the same operation as set_status / set_priority / claim / release.',
  input: ApplyLensActionInput,
  output: answer({ lens_id: s.string(), item_id: s.string(), action: s.string(), value: nullableString, result: s.any() }),
  errors: [403, 409],
  example: { lens_id: 'lens-open-work', item_id: 'task-fix-login', action: 'set_priority', value: 'p1' },
  run: actions.applyLensAction,
});
