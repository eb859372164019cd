// How to connect one agent kind (Claude Code, Codex CLI, Gemini CLI), and how many of its
// sessions have reported in.

import { agentKind } from '../../desks';
import { Code } from '../../parts';
import { plural } from '../../tasks';
import type { SessionView } from '../../types';

/** `sessions`: that kind's sessions, or null while they are not loaded. */
export function ConnectHint({ kind, sessions }: { kind: string; sessions: SessionView[] | null }) {
  const { name, command, connect } = agentKind(kind);
  const live = sessions?.filter((s) => s.activity !== 'ended').length ?? 0;
  return (
    <section class="connect" aria-label={`connect ${name}`} data-connect={kind}>
      <h3>Connect {name}</h3>
      <p>
        <Code text={`Connect ${name} once (${connect}), then start \`${command}\` in a desk's directory.`} />
      </p>
      <p class="note">
        {sessions === null
          ? ''
          : sessions.length === 0
            ? `No ${name} session has reported in yet.`
            : `${plural(live, `${name} session`, `${name} sessions`)} running, ${sessions.length} seen.`}
      </p>
    </section>
  );
}
