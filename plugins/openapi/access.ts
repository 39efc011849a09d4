/** Who may call the tenant's OpenAPI document (kernel/access.ts); GET /openapi.json needs no credential. */
import { callers, type AccessMap } from '../../kernel/access.js';

export const openapiAccess: AccessMap = {
  get_openapi: { callers: callers.anyPerson, scope: "the routes of the plugins enabled for the caller's tenant" },
};
