(input) => {
  const rules = __RULES__;
  const node = input.node || {};
  const errors = [];
  const slug = /^[a-z0-9][a-z0-9-]*$/;
  for (const rule of rules) {
    const value = node[rule.field];
    if (value === undefined || value === null) {
      if (rule.required) errors.push(`${rule.field} is required for ${node.type}`);
      continue;
    }
    if (rule.kind === 'slug-list') {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || !slug.test(v))) {
        errors.push(`${rule.field} must be a list of kebab-case slugs`);
      }
    } else if (rule.kind === 'string-list') {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.length === 0 || v.length > 500)) {
        errors.push(`${rule.field} must be a list of non-empty strings`);
      }
    } else if (rule.kind === 'type-list') {
      const list = typeof value === 'string' ? [value] : value;
      if (!Array.isArray(list) || list.length === 0 || list.some((v) => typeof v !== 'string' || !slug.test(v))) {
        errors.push(`${rule.field} must be a type name or a non-empty list of type names`);
      }
    } else if (rule.kind === 'hook-map') {
      if (typeof value !== 'object' || Array.isArray(value)) {
        errors.push(`${rule.field} must map hook names to function source`);
        continue;
      }
      for (const [name, src] of Object.entries(value)) {
        if (!rule.names.includes(name)) errors.push(`${rule.field}.${name}: unknown hook point; known: ${rule.names.join(', ')}`);
        else if (typeof src !== 'string' || src.trim() === '') errors.push(`${rule.field}.${name} must be JS function source`);
        else if (src.length > rule.max) errors.push(`${rule.field}.${name} is ${src.length} characters; at most ${rule.max}`);
      }
    } else if (rule.kind === 'map') {
      if (typeof value !== 'object' || Array.isArray(value)) errors.push(`${rule.field} must be a mapping`);
    } else if (rule.kind === 'steps') {
      if (!Array.isArray(value) || value.length === 0) {
        errors.push(`${rule.field} must be a non-empty list of steps`);
        continue;
      }
      const ids = new Set();
      for (const [i, step] of value.entries()) {
        if (!step || typeof step !== 'object' || typeof step.id !== 'string' || !slug.test(step.id)) {
          errors.push(`${rule.field}[${i}].id must be a kebab-case slug`);
          continue;
        }
        if (ids.has(step.id)) errors.push(`${rule.field}[${i}].id '${step.id}' is duplicated`);
        ids.add(step.id);
      }
      for (const [i, step] of value.entries()) {
        if (!step || step.needs === undefined) continue;
        if (!Array.isArray(step.needs)) { errors.push(`${rule.field}[${i}].needs must be a list`); continue; }
        for (const need of step.needs) {
          if (!ids.has(need)) errors.push(`${rule.field}[${i}].needs names unknown step '${need}'`);
          if (need === step.id) errors.push(`${rule.field}[${i}] cannot need itself`);
        }
      }
    }
  }
  return { ok: errors.length === 0, errors };
}
