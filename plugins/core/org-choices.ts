/**
 * GET /v1/me/org-choices. With no identity provider configured (docs/design.md §7) the answer is
 * the tenant's own org with `source: bound`; the identity plugin's provider adapter makes
 * it a live `idp` enumeration.
 */
import { answer, s, type Static } from '../../kernel/operation.js';
import type { OpContext } from '../../kernel/plugin.js';

/** The answer of get_org_choices (declared here: the identity plugin's provider answers the same shape). */
export const OrgChoices = answer({
  org_choices: s.array(answer({ slug: s.string(), label: s.string(), default: s.boolean() }, ['slug', 'label'])),
  source: s.enum(['idp', 'bound']),
});

export type OrgChoice = Static<typeof OrgChoices>['org_choices'][number];
export type OrgChoicesProvider = (ctx: OpContext) => Promise<Static<typeof OrgChoices> | null>;

/** Set by a plugin that talks to an identity provider; null answers `bound`. */
export const orgChoiceProviders: OrgChoicesProvider[] = [];

export async function getOrgChoices(ctx: OpContext): Promise<Static<typeof OrgChoices>> {
  for (const provider of orgChoiceProviders) {
    const answer = await provider(ctx);
    if (answer) return answer;
  }
  return { org_choices: [{ slug: ctx.tenant.org, label: ctx.tenant.org, default: true }], source: 'bound' };
}
