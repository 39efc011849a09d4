(input) => {
  const table = __TABLE__;
  const from = input.from == null ? null : String(input.from);
  const to = String(input.to);
  const list = (xs) => xs.join(', ');
  if (!table.statuses.includes(to)) {
    return { allow: false, reason: `'${to}' is not a status of ${table.type}; allowed: ${list(table.statuses)}` };
  }
  if (from === null || from === to) return { allow: true };
  if (table.self_approval && from === 'proposed' && to === 'active') {
    const author = input.node && input.node.author;
    if (author && author === input.actor) {
      return { allow: false, reason: `self-approval ban: ${input.actor} was the last author of this proposal; another identity must activate it` };
    }
  }
  const moves = table.moves[from];
  if (!moves) return { allow: false, reason: `'${from}' is not a status of ${table.type}` };
  if (moves.includes(to)) return { allow: true };
  if (moves.length === 0) return { allow: false, reason: `${table.type} status '${from}' is final; no move to '${to}'` };
  return { allow: false, reason: `${table.type} cannot move from '${from}' to '${to}'; allowed from '${from}': ${list(moves)}` };
}
