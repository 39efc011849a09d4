/**
 * Per-tenant plugin state: a plugin's in-memory book (lease table, queue book, commit
 * index, ...) made on first use for a tenant and dropped with the tenant object.
 */
import type { Tenant } from './tenant.js';

export function perTenant<T>(make: (tenant: Tenant) => T): (tenant: Tenant) => T {
  const values = new WeakMap<Tenant, T>();
  return (tenant) => {
    let value = values.get(tenant);
    if (value === undefined) {
      value = make(tenant);
      values.set(tenant, value);
    }
    return value;
  };
}
