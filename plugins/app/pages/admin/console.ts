/**
 * The operator console's frame (issue 25 item 4): the admin gate, the page layout with the
 * console's own navigation, and the small pieces every console page shares. The console is
 * for admins acting with their own credential; anyone else gets the 403 page (the page exists,
 * the person may not use it: the same answer the admin operations give over REST and MCP).
 * Every change goes through the admin operations (operations-bridge.ts), each of which checks
 * the caller again.
 */
import { errors, isSvcError } from '../../../../kernel/errors.js';
import { html, layout, type Html } from '../../html.js';
import { isConsoleAdmin, type AppResult, type Signed } from '../../host.js';

export type ConsoleSection = 'plugins' | 'people' | 'tokens' | 'agents' | 'webhooks' | 'github' | 'audit';

const SECTIONS: Array<{ key: ConsoleSection; href: string; label: string; plugin?: string }> = [
  { key: 'plugins', href: '/app/admin/plugins', label: 'Plugins' },
  { key: 'people', href: '/app/admin/people', label: 'People', plugin: 'identity' },
  { key: 'tokens', href: '/app/admin/tokens', label: 'Tokens', plugin: 'identity' },
  { key: 'agents', href: '/app/admin/agents', label: 'Agents', plugin: 'identity' },
  { key: 'webhooks', href: '/app/admin/webhooks', label: 'Webhooks', plugin: 'webhooks' },
  { key: 'github', href: '/app/admin/github', label: 'GitHub', plugin: 'github' },
  { key: 'audit', href: '/app/admin/audit', label: 'Identity audit', plugin: 'identity' },
];

/** Refuses a person who is not an admin (or an admin's agent): the 403 page. */
export function requireConsoleAdmin(s: Signed): void {
  if (!isConsoleAdmin(s.session)) throw errors.forbidden('the operator console is for admins of this tenant');
}

/** A console page: the app's layout with the console's section links (those whose plugin the tenant has). */
export function consolePage(s: Signed, section: ConsoleSection, title: string, body: Html, status = 200): AppResult {
  const links = SECTIONS.filter((x) => !x.plugin || s.bridge.has(x.plugin)).map(
    (x) => html`<li><a href="${x.href}"${x.key === section ? html` aria-current="page"` : ''}>${x.label}</a></li>`,
  );
  return {
    status,
    html: layout(
      { title: `${title} · Admin`, viewer: s.viewer, nav: 'admin', flash: s.flash },
      html`<nav aria-label="Operator console" class="console-nav"><ul>${links}</ul></nav>
<h1>${title}</h1>
${body}`,
    ),
  };
}

/** A time as people read it (UTC, to the minute), machine-readable in `datetime`. */
export function when(iso: string | null | undefined, none = 'never'): Html {
  if (!iso) return html`<span class="muted">${none}</span>`;
  return html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 16)} UTC</time>`;
}

/**
 * A secret shown this once, right after it was made (a token, a webhook signing secret): the
 * answer page itself carries it, never a redirect, a flash or a URL, so reloading the list
 * never shows it again.
 */
export function secretOnce(label: string, secret: string, note: string, key = 'secret'): Html {
  return html`<section class="secret-once" aria-labelledby="${key}-h"><h2 id="${key}-h">${label}</h2>
<p>${note} It is shown this once: copy it now.</p>
<p><label for="${key}-value" class="sr-only">${label}</label><input id="${key}-value" class="secret" readonly value="${secret}" size="60"></p></section>`;
}

/**
 * Runs a console action and goes back to `back` with its outcome as the flash: the
 * operation's own message on a refusal (a 4xx), so the admin reads why; a 5xx is the error page.
 */
export async function act(s: Signed, back: string, run: () => Promise<string>): Promise<AppResult> {
  try {
    s.setFlash('ok', await run());
  } catch (err) {
    if (!isSvcError(err) || err.status >= 500) throw err;
    s.setFlash('error', err.message);
  }
  return { redirect: back };
}

/** A form's checkbox or yes/no value. */
export const checked = (form: URLSearchParams, name: string): boolean => ['on', 'true', '1', 'yes'].includes(form.get(name) ?? '');
