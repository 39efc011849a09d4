/**
 * The sign-in and consent page of /oauth/authorize: plain, accessible HTML without scripts.
 * Step 1 asks for a personal access token (posted once in the form body, never in a URL);
 * step 2 names the client, the tenant, the person and what the grant allows, with Approve
 * and Deny. Every form carries the pending authorization's id and its CSRF token, which must
 * match the SameSite=Strict cookie set with the page.
 */
import type { Pending } from './provider.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
label{display:block;font-weight:600;margin:1rem 0 .25rem}input[type=password]{width:100%;padding:.5rem;font:inherit}
button{font:inherit;padding:.5rem 1.25rem;margin:1rem .5rem 0 0}.error{color:#a40000;font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}code{background:#f2f2f2;padding:0 .25rem}`;

function hidden(p: Pending): string {
  return `<input type="hidden" name="pending" value="${esc(p.id)}"><input type="hidden" name="csrf" value="${esc(p.csrf)}">`;
}

export function consentPage(p: Pending, error: string | null): string {
  const client = p.client.name || p.client.id;
  const redirect = (() => {
    try {
      return new URL(p.params.redirectUri).host || p.params.redirectUri;
    } catch {
      return p.params.redirectUri;
    }
  })();
  const who = p.signedIn;
  const body = who
    ? `<h1>Allow ${esc(client)}?</h1>
<dl><dt>Application</dt><dd>${esc(client)} (<code>${esc(p.client.id)}</code>)</dd>
<dt>Returns to</dt><dd>${esc(redirect)}</dd>
<dt>Tenant</dt><dd>${esc(who.org)}</dd>
<dt>Acting as</dt><dd>${esc(who.name)} (<code>${esc(who.person)}</code>)</dd></dl>
<p>It will be able to read this tenant's work graph and to write as you: create and edit nodes,
claim and release work, set statuses and answer questions, through the REST API and MCP.
Access tokens last an hour and are renewed until you revoke the token you signed in with,
an admin revokes it, or you are offboarded.</p>
<form method="post" action="/oauth/consent">${hidden(p)}
<button type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny">Deny</button></form>`
    : `<h1>Sign in to connect ${esc(client)}</h1>
<p><strong>${esc(client)}</strong> (<code>${esc(p.client.id)}</code>), returning to ${esc(redirect)},
asks to use the work graph on your behalf. Sign in with one of your personal access tokens;
the next page shows the tenant and what you would grant.</p>
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
<form method="post" action="/oauth/consent">${hidden(p)}
<label for="token">Personal access token</label>
<input id="token" name="token" type="password" autocomplete="off" required aria-describedby="token-help">
<p id="token-help">It starts with <code>svc_pat_</code>. It is checked once and never stored by the application.</p>
<button type="submit" name="action" value="signin">Continue</button>
<button type="submit" name="action" value="deny" formnovalidate>Cancel</button></form>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${who ? 'Approve' : 'Sign in'}: ${esc(client)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>
`;
}

/** The answer to a consent form whose redirect CSP cannot allow: the browser goes on by itself (no script), with a link as well. */
export function returnPage(url: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${esc(url)}">
<title>Returning to the application</title><style>${STYLE}</style></head>
<body><main><h1>Returning to the application</h1><p><a href="${esc(url)}">Continue</a> if nothing happens.</p></main></body></html>
`;
}

/** An authorize request this server will not send back to the client: what went wrong, for the person who followed the link. */
export function errorPage(code: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cannot connect the application</title><style>${STYLE}</style></head>
<body><main><h1>This application cannot be connected</h1>
<p class="error" role="alert">${esc(message)}</p>
<p>Error code: <code>${esc(code)}</code>. Nothing was shared with the application. Start the connection again from it, or tell its maker.</p></main></body></html>
`;
}
