/**
 * The node page's people and links (issue 25 item 1): who is assigned, by name, with a
 * person picker that writes the `assigned` edge and a button per person that removes it;
 * and "Link to another node" offering only the edge types people link work with (blocks
 * first; the features' own types such as assigned, discusses or review-requested are
 * written by their own controls), with the target picked by title or id.
 */
import type { NodeRecord } from '../../../kernel/graph-index.js';
import { errors } from '../../../kernel/errors.js';
import { csrfField, html, type Html } from '../html.js';
import type { AppRequest, AppResult, Signed } from '../host.js';
import { linkableIds, personEdgeTypes, resolvePick } from './create.js';
import { act } from './node.js';
import { personLink, personName } from './words.js';

const action = (id: string, name: string) => `/app/nodes/${encodeURIComponent(id)}/${name}`;

/** The "Assigned" box: names with an Unassign button each, and a picker of the people not yet assigned. */
export function assignSection(s: Signed, id: string, record: NodeRecord): Html {
  const csrf = csrfField(s.viewer.csrf);
  const assigned = record.edges.filter((e) => e.type === 'assigned').map((e) => e.to);
  const others = s.bridge.people().filter((p) => !assigned.includes(p.id));
  return html`<section aria-labelledby="assign-h" data-live="assigned"><h2 id="assign-h">Assigned</h2>
${
  assigned.length
    ? html`<ul class="plain assignees">${assigned.map(
        (p) => html`<li>${personLink(s, p)}${p === s.viewer.personId ? ' (you)' : ''}
<form method="post" action="${action(id, 'unassign')}" class="inline">${csrf}<input type="hidden" name="person" value="${p}"><button type="submit" class="link" aria-label="Unassign ${personName(s, p) ?? p}">Unassign</button></form></li>`,
      )}</ul>`
    : html`<p class="muted">Nobody.</p>`
}
${
  others.length
    ? html`<form method="post" action="${action(id, 'assign')}" class="row">${csrf}
<label for="assign-sel" class="sr-only">Person to assign</label>
<select id="assign-sel" name="person">${others.map((p) => html`<option value="${p.id}"${p.id === s.viewer.personId ? html` selected` : ''}>${p.name}${p.id === s.viewer.personId ? ' (me)' : ''}</option>`)}</select>
<button type="submit">Assign</button></form>`
    : ''
}
</section>`;
}

/** "Link to another node": the edge types people use, the target by title or id (suggestions from /app/lookup). */
export function edgeForm(s: Signed, id: string): Html {
  const registry = s.bridge.tenant.registry;
  return html`<section aria-labelledby="edge-h"><h2 id="edge-h">Link to another node</h2>
<form method="post" action="${action(id, 'edges')}" class="stack">${csrfField(s.viewer.csrf)}
<label for="edge-type">Link type</label>
<select id="edge-type" name="type">${personEdgeTypes(s).map((t) => html`<option value="${t}" title="${registry.edgeTypes.get(t)?.description ?? ''}">${t}</option>`)}</select>
<label for="edge-to">Node (title or id)</label>
<input id="edge-to" name="to" required list="edge-to-list" data-lookup="node" autocomplete="off">
<datalist id="edge-to-list"></datalist>
<button type="submit">Add link</button></form></section>`;
}

/** The person a form names: a person id of the tenant (the picker's value). */
function personOf(s: Signed, req: AppRequest): string {
  const person = (req.form.get('person') ?? '').trim();
  if (!personName(s, person))
    throw errors.validation('choose a person from the list', [{ field: 'person', message: 'not a person of this tenant' }]);
  return person;
}

export const assignNode = (req: AppRequest, s: Signed): Promise<AppResult> => {
  const id = req.params.id!;
  return act(s, id, `Assigned ${personName(s, req.form.get('person') ?? '') ?? ''}`, () =>
    s.bridge.addEdge(id, 'assigned', personOf(s, req)),
  );
};

export const unassignNode = (req: AppRequest, s: Signed): Promise<AppResult> => {
  const id = req.params.id!;
  return act(s, id, `Unassigned ${personName(s, req.form.get('person') ?? '') ?? ''}`, () =>
    s.bridge.removeEdge(id, 'assigned', personOf(s, req)),
  );
};

/** Adds a link to a node named by title or id; a name that fits none or several is said on the page, nothing written. */
export const edgeNode = (req: AppRequest, s: Signed): Promise<AppResult> => {
  const id = req.params.id!;
  const type = req.form.get('type') ?? '';
  const typed = (req.form.get('to') ?? '').trim();
  const pick = resolvePick(s, typed, linkableIds(s), 'node');
  const title = 'id' in pick ? (s.bridge.tenant.index.get(pick.id)?.title ?? pick.id) : typed;
  return act(s, id, `Linked: ${type} ${title}`, async () => {
    if ('error' in pick) throw errors.validation(pick.error, [{ field: 'to', message: pick.error }]);
    if (!personEdgeTypes(s).includes(type))
      throw errors.validation(`choose a link type from the list (${personEdgeTypes(s).join(', ')})`, [{ field: 'type' }]);
    return s.bridge.addEdge(id, type, pick.id);
  });
};
