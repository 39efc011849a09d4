/**
 * Small builders for MCP tool input schemas (JSON Schema), shared by every plugin manifest.
 */

/** A closed object schema: the listed properties, the required ones, nothing else. */
export function objectSchema(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: 'object', properties, required, additionalProperties: false };
}

export function stringArg(description: string): Record<string, unknown> {
  return { type: 'string', description };
}
