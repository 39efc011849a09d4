/**
 * GET /v1/me/org-choices. With no identity provider configured (docs/design.md §7) the answer is
 * the tenant's own org with `source: bound`; the identity plugin's provider adapter makes
 * it a live `idp` enumeration.
 */
import type { OpContext } from '../../kernel/plugin.js';

export type OrgChoice = { slug: string; label: string; default?: boolean };
export type OrgChoicesProvider = (ctx: OpContext) => Promise<{ org_choices: OrgChoice[]; source: string } | null>;

/** Set by a plugin that talks to an identity provider; null answers `bound`. */
export const orgChoiceProviders: OrgChoicesProvider[] = [];

export async function orgChoices(ctx: OpContext) {
  for (const provider of orgChoiceProviders) {
    const answer = await provider(ctx);
    if (answer) return answer;
  }
  return { org_choices: [{ slug: ctx.tenant.org, label: ctx.tenant.org, default: true }], source: 'bound' };
}
