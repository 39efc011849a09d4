/**
 * The authenticated identity of a request. Attribution is always stamped from here,
 * never from the payload.
 */
import type { TokenRecord } from './auth.js';

export interface Actor {
  org: string;
  token: TokenRecord;
  /** person node id the token is bound to (for agent tokens: the owner) */
  personId: string;
  /** false when the person node does not exist in the graph */
  bound: boolean;
  name: string;
  email: string;
  isAdmin: boolean;
  /** set for agent tokens (standing or per-session) */
  agent: string | null;
  session: string | null;
}
