/**
 * The one table of coded errors. Every client-visible failure is a thrown `SvcError`;
 * the REST adapter turns it into `{error:{code,message,details}}` with its status, the
 * MCP adapter into a tool result with `isError: true` carrying the same envelope.
 */
export class SvcError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'SvcError';
  }

  envelope(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export const errors = {
  badRequest: (message: string, details: Record<string, unknown> = {}) => new SvcError(400, 'bad_request', message, details),
  unauthorized: () => new SvcError(401, 'unauthorized', 'missing, invalid, expired or revoked token'),
  forbidden: (message: string, details: Record<string, unknown> = {}) => new SvcError(403, 'forbidden', message, details),
  noPersonForbidden: (message = 'this token is not bound to a person node') => new SvcError(403, 'no_person', message),
  notFound: (what: string, details: Record<string, unknown> = {}) => new SvcError(404, 'not_found', `${what} not found`, details),
  conflict: (message: string, details: Record<string, unknown> = {}) => new SvcError(409, 'conflict', message, details),
  revisionConflict: (id: string, current: string | null, supplied: string | null) =>
    new SvcError(409, 'conflict', `revision mismatch on ${id}: the node changed since you read it`, {
      id,
      current_revision: current,
      supplied_revision: supplied,
    }),
  transitionDenied: (reason: string, details: Record<string, unknown> = {}) => new SvcError(409, 'transition_denied', reason, details),
  leaseLost: (message: string, details: Record<string, unknown> = {}) => new SvcError(409, 'lease_lost', message, details),
  /** 409: a write to a work node someone else holds, refused because the tenant runs `leases: strict`. */
  leaseHeld: (message: string, details: Record<string, unknown> = {}) => new SvcError(409, 'lease_held', message, details),
  leaseExpired: (message: string, details: Record<string, unknown> = {}) => new SvcError(409, 'lease_expired', message, details),
  outcomeConflict: (message: string, details: Record<string, unknown> = {}) => new SvcError(409, 'outcome_conflict', message, details),
  tooLarge: (limit: number) => new SvcError(413, 'too_large', `request body exceeds ${limit} bytes`, { limit_bytes: limit }),
  /** 422 with the validator's error list returned verbatim under `details.errors`. */
  validation: (message: string, errorList: unknown[] = []) => new SvcError(422, 'validation_failed', message, { errors: errorList }),
  invalidNode: (message: string, details: Record<string, unknown> = {}) => new SvcError(422, 'invalid_node', message, details),
  noPerson: (message = 'the caller is not bound to a person node') => new SvcError(422, 'no_person', message),
  badGateway: (code: string, message: string) => new SvcError(502, code, message),
  unavailable: (code: string, message: string) => new SvcError(503, code, message),
  internal: () => new SvcError(500, 'internal', 'internal error'),
};

export function isSvcError(err: unknown): err is SvcError {
  return err instanceof SvcError;
}
