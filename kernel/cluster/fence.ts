/**
 * Fencing of tenant writes in cluster mode. A process writes a tenant's operational rows only
 * while it holds the tenant's ownership lease; `wg_owners.fence` is bumped at every change of
 * owner, and every write checks, in the statement (or transaction) that writes, that the fence
 * it holds is still the current one. A paused old owner's late writes therefore fail.
 */
import { errors, type SvcError } from '../errors.js';

/**
 * The fencing token this process holds for `org`: a number (writes are checked against
 * wg_owners), `null` (this process does not own the tenant: writes are refused), or
 * `undefined` (unfenced: operator tools and the data-directory-wide collections).
 */
export type FenceOf = (org: string) => number | null | undefined;

export function notOwner(org: string): SvcError {
  return errors.unavailable('not_owner', `this process no longer serves tenant ${org}`);
}

/** SQL of the CTE `ok`: one row when the write may go ahead ($1 org, $2 fence). */
export function okCte(fenced: boolean): string {
  return fenced ? 'ok AS (SELECT 1 FROM wg_owners WHERE org = $1 AND fence = $2 FOR SHARE)' : 'ok AS (SELECT 1 WHERE $2::bigint IS NULL)';
}
