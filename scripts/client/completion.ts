/**
 * Shell completion: `workgraph completion bash|zsh|fish` prints a script that asks
 * `workgraph __complete <words...>` for candidates. Commands and flags come from the manifest;
 * node ids for positional <id> arguments from GET /v1/status?titles=1 (briefly, silently:
 * a slow or unreachable server completes nothing rather than hanging the shell).
 */
import { typesOf } from './args.js';
import { connect, request } from './connection.js';
import { loadManifest } from './manifest.js';
import { ALIASES, BUILTINS } from './main.js';

const OPERATOR = ['serve', 'mcp', 'tenant', 'token', 'cluster', 'import', 'backup', 'restore'];

export function completionScript(shell: 'bash' | 'zsh' | 'fish'): string {
  if (shell === 'bash')
    return `# workgraph completion for bash: source <(workgraph completion bash)
_workgraph() {
  local IFS=$'\\n'
  COMPREPLY=($(workgraph __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _workgraph workgraph
`;
  if (shell === 'zsh')
    return `#compdef workgraph
# workgraph completion for zsh: source <(workgraph completion zsh)
_workgraph() {
  local -a candidates
  candidates=("\${(@f)$(workgraph __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -a candidates
}
compdef _workgraph workgraph
`;
  return `# workgraph completion for fish: workgraph completion fish | source
complete -c workgraph -f -a '(workgraph __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`;
}

async function nodeIds(): Promise<string[]> {
  const conn = await connect(undefined);
  const timeout = new Promise<null>((r) => setTimeout(() => r(null), 2000).unref());
  const res = await Promise.race([request(conn, 'GET', '/v1/status?titles=1'), timeout]);
  if (!res || res.status !== 200) return [];
  const body = JSON.parse(res.bytes.toString()) as { titles?: Array<{ id: string }> };
  return (body.titles ?? []).map((t) => t.id);
}

/** Candidates for the last word, given the words after `workgraph` (the last one is being typed). */
export async function complete(words: string[]): Promise<string> {
  const current = words[words.length - 1] ?? '';
  const before = words.slice(0, -1);
  const manifest = await loadManifest();
  const out = (list: string[]) =>
    [...new Set(list)]
      .filter((c) => c.startsWith(current))
      .sort()
      .join('\n') + '\n';
  if (before.length === 0)
    return out([
      ...manifest.commands.map((c) => c.name),
      ...ALIASES.map((a) => a.name),
      ...BUILTINS.filter((b) => !b.startsWith('_')),
      ...OPERATOR,
    ]);
  const command = before[0]!;
  if (command === 'completion') return out(['bash', 'zsh', 'fish']);
  if (command === 'profile') {
    if (before.length === 1) return out(['list', 'use', 'remove']);
    const { readProfiles } = await import('./profiles.js');
    return out(Object.keys(readProfiles().profiles));
  }
  const alias = ALIASES.find((a) => a.name === command);
  const cmd = manifest.commands.find((c) => c.name === (alias?.target ?? command));
  const props = (cmd?.input.properties as Record<string, Record<string, unknown>> | undefined) ?? {};
  const previous = before[before.length - 1]!;
  if (cmd && previous.startsWith('--') && !previous.includes('=')) {
    const schema = props[previous.slice(2).replace(/-/g, '_')];
    if (schema && !(typesOf(schema).length === 1 && typesOf(schema)[0] === 'boolean')) {
      if (Array.isArray(schema.enum)) return out((schema.enum as unknown[]).map(String));
      if (/^(id|to|node|mentions)$/.test(previous.slice(2))) return out(await nodeIds().catch(() => []));
      return '\n';
    }
  }
  if (current.startsWith('-')) {
    const flags = cmd
      ? Object.keys(props)
          .filter((k) => !cmd.pathParams.includes(k))
          .map((k) => `--${k.replace(/_/g, '-')}`)
      : [];
    return out([...flags, '--json', '--profile', '--input', '--help', '--no-color']);
  }
  // a positional <id>: node ids
  const wantsId = command === 'edit' || (cmd && cmd.pathParams[before.slice(1).filter((w) => !w.startsWith('-')).length] === 'id');
  if (wantsId) return out(await nodeIds().catch(() => []));
  return '\n';
}
