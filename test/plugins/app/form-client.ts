/**
 * A cookie-keeping client of the app's forms: what a browser without script does (GET a page,
 * POST its form with the page's CSRF token, keep the cookies it is given, never follow a
 * redirect on its own). Shared by the app's HTTP tests so they exercise the same no-script
 * path the same way.
 */
import { expect } from 'chai';

export type Form = Record<string, string | string[]> | Array<[string, string]>;

export interface FormAnswer {
  status: number;
  location: string | null;
  headers: Headers;
  text: string;
}

const CSRF = /name="csrf" value="([^"]+)"/;

export class FormClient {
  readonly cookies = new Map<string, string>();
  /** the CSRF token of the last page that carried one (per session: every page of a session shows the same) */
  csrf = '';
  constructor(readonly base: string) {}

  /** the Cookie header this client sends */
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** One request as a browser sends it: cookies, a urlencoded form (array values repeat the field), no redirect followed. */
  async request(method: string, path: string, form?: Form): Promise<FormAnswer> {
    const headers: Record<string, string> = { cookie: this.header() };
    let body: string | undefined;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      const params = new URLSearchParams();
      const pairs = Array.isArray(form) ? form : Object.entries(form);
      for (const [k, v] of pairs) for (const x of Array.isArray(v) ? v : [v]) params.append(k, x);
      body = params.toString();
    }
    const res = await fetch(this.base + path, { method, headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair = ''] = c.split(';');
      const eq = pair.indexOf('=');
      const [k, v] = [pair.slice(0, eq), pair.slice(eq + 1)];
      if (v) this.cookies.set(k, v);
      else this.cookies.delete(k);
    }
    const text = await res.text();
    const csrf = CSRF.exec(text)?.[1];
    if (csrf) this.csrf = csrf;
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, text };
  }

  /** the CSRF token of a form page (fails the test when the page has none) */
  csrfOf(html: string): string {
    const m = CSRF.exec(html);
    expect(m, 'a CSRF field on the page').to.not.equal(null);
    return m![1]!;
  }

  /** The sign-in form: GET it, POST the token with its CSRF token. The POST's answer (303 on success). */
  async signIn(token: string, next = '/app/queue'): Promise<FormAnswer> {
    const page = await this.request('GET', '/app/signin');
    return this.request('POST', '/app/signin', { csrf: this.csrfOf(page.text), token, next });
  }

  /** Signs in (it must succeed) and opens the page it lands on, so `csrf` is the new session's. */
  async signedIn(token: string, next = '/app/queue'): Promise<FormAnswer> {
    const res = await this.signIn(token, next);
    expect(res.status, 'sign-in').to.equal(303);
    return this.request('GET', res.location!);
  }

  /** A form posted with the session's CSRF token. */
  post(path: string, form: Record<string, string | string[]> = {}): Promise<FormAnswer> {
    return this.request('POST', path, { csrf: this.csrf, ...form });
  }

  /** A form posted, then the page its 303 leads to (where the flash message shows). */
  async postAndFollow(path: string, form: Record<string, string | string[]> = {}): Promise<FormAnswer> {
    const res = await this.post(path, form);
    if (res.status !== 303 || !res.location) return res;
    return this.request('GET', res.location);
  }
}
