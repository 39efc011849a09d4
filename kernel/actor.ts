/**
 * The authenticated identity of a request. Attribution is always stamped from here,
 * never from the payload.
 */
import type { TokenRecord } from './auth.js';

/**
 * Read-only: one actor object serves every request of its token while the person node is the
 * same one (kernel/tenants.ts `actorFor`), so nothing may change it.
 */
export interface Actor {
  readonly org: string;
  readonly token: TokenRecord;
  /** person node id the token is bound to (for agent tokens: the owner) */
  readonly personId: string;
  /** false when the person node does not exist in the graph */
  readonly bound: boolean;
  readonly name: string;
  readonly email: string;
  readonly isAdmin: boolean;
  /** set for agent tokens (standing or per-session) */
  readonly agent: string | null;
  readonly session: string | null;
}
