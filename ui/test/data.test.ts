import { describe, expect, it } from 'vitest';
import {
  createDataSource,
  DataError,
  expectSettings,
  isNotice,
  isDesktopOnlyNotice,
  type Env,
  type LiveListener,
  type LiveStatus,
  type NavigateRequest,
} from '../src/data';
import type { Notice, SettingsMap, TaskView } from '../src/types';
import { desk, session, task } from './fixtures';

/** One row of the settings catalogue, as the daemon sends it. */
const CATALOGUE_ROW = {
  key: 'reminders.hourly_cap',
  group: 'Reminders',
  label: 'Reminders per hour',
  help: 'At most this many messages into one session per hour.',
  kind: 'count',
  min: 1,
  max: 60,
  units: [],
  default: '6',
  expected: 'a whole number from 1 to 60',
  shown: true,
};

interface Recorded {
  fetches: { url: string; method: string; headers: Record<string, string>; body: string | undefined }[];
  invokes: { cmd: string; args: Record<string, unknown> | undefined }[];
  listens: string[];
  unlistened: string[];
  replaced: string[];
  storage: Map<string, string>;
  timers: { fn: () => void; ms: number }[];
}

function fakeEnv(opts: {
  isTauri?: boolean;
  hash?: string;
  stored?: string;
  respond?: (url: string, init: RequestInit | undefined) => Response | Promise<Response>;
  invoke?: (cmd: string, args: Record<string, unknown> | undefined) => unknown;
  listen?: (event: string, handler: (payload: unknown) => void) => Promise<() => void>;
}): { env: Env; rec: Recorded } {
  const rec: Recorded = { fetches: [], invokes: [], listens: [], unlistened: [], replaced: [], storage: new Map(), timers: [] };
  if (opts.stored !== undefined) rec.storage.set('taskkeeper.token', opts.stored);
  const env: Env = {
    isTauri: opts.isTauri ?? false,
    invoke: async (cmd, args) => {
      rec.invokes.push({ cmd, args });
      return opts.invoke ? opts.invoke(cmd, args) : undefined;
    },
    listen: (event, handler) => {
      rec.listens.push(event);
      if (opts.listen) return opts.listen(event, handler);
      return Promise.resolve(() => void rec.unlistened.push(event));
    },
    fetch: async (url, init) => {
      rec.fetches.push({
        url,
        method: init?.method ?? 'GET',
        headers: { ...(init?.headers as Record<string, string>) },
        body: typeof init?.body === 'string' ? init.body : undefined,
      });
      if (!opts.respond) throw new Error('no fetch expected');
      return opts.respond(url, init);
    },
    location: { hash: opts.hash ?? '', pathname: '/ui/', search: '' },
    history: { replaceState: (_d, _u, url) => rec.replaced.push(url ?? '') },
    sessionStorage: {
      getItem: (k) => rec.storage.get(k) ?? null,
      setItem: (k, v) => void rec.storage.set(k, v),
    },
    setTimeout: (fn, ms) => rec.timers.push({ fn, ms }),
    clearTimeout: () => {},
  };
  return { env, rec };
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

/** A listener that records what it is told. */
function recorder() {
  const got = {
    tasks: [] as TaskView[],
    notices: [] as Notice[],
    resyncs: 0,
    statuses: [] as LiveStatus[],
    navigations: [] as NavigateRequest[],
    settings: [] as SettingsMap[],
    sessions: 0,
  };
  const listener: LiveListener = {
    onTask: (t) => got.tasks.push(t),
    onNotice: (n) => got.notices.push(n),
    onSettings: (s) => got.settings.push(s),
    onSessions: () => (got.sessions += 1),
    onResync: () => (got.resyncs += 1),
    onStatus: (s) => got.statuses.push(s),
    onNavigate: (to) => got.navigations.push(to),
  };
  return { got, listener };
}

/** A response whose body streams `chunks` and then ends. */
function stream(chunks: string[]): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(check()).toBe(true);
};

describe('browser transport', () => {
  it('takes the token from the fragment, stores it, removes it, and sends it as a bearer', async () => {
    const { env, rec } = fakeEnv({ hash: '#token=s3cret', respond: () => json(200, { tasks: [task()] }) });
    const data = createDataSource(env);
    expect(data.transport).toBe('http');
    expect(data.canAutostart).toBe(false);
    expect(rec.storage.get('taskkeeper.token')).toBe('s3cret');
    expect(rec.replaced).toEqual(['/ui/']);

    const tasks = await data.listTasks('open');
    expect(tasks.map((t) => t.id)).toEqual(['task-1']);
    expect(rec.fetches).toEqual([
      {
        url: '/api/tasks?state=open',
        method: 'GET',
        headers: { Accept: 'application/json', Authorization: 'Bearer s3cret' },
        body: undefined,
      },
    ]);
  });

  it('finds the token in sessionStorage after a reload', async () => {
    const { env, rec } = fakeEnv({ stored: 'kept', respond: () => json(200, { tasks: [] }) });
    await createDataSource(env).listTasks('ended');
    expect(rec.replaced).toEqual([]);
    expect(rec.fetches[0]?.url).toBe('/api/tasks?state=ended');
    expect(rec.fetches[0]?.headers.Authorization).toBe('Bearer kept');
  });

  it('trades a sign-in code from the fragment for the token once, before any call, and drops it from the address at once', async () => {
    const { env, rec } = fakeEnv({
      hash: '#code=c0de',
      respond: (url) => (url === '/ui/session' ? json(200, { token: 's3cret' }) : json(200, { tasks: [], settings: {} })),
    });
    const data = createDataSource(env);
    // Gone from the address bar before the exchange has even answered.
    expect(rec.replaced).toEqual(['/ui/']);

    await Promise.all([data.listTasks('open'), data.getSettings()]);
    expect(rec.fetches[0]).toEqual({
      url: '/ui/session',
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: JSON.stringify({ code: 'c0de' }),
    });
    expect(rec.fetches.filter((f) => f.url === '/ui/session')).toHaveLength(1);
    expect(rec.fetches.slice(1).map((f) => [f.url, f.headers.Authorization])).toEqual([
      ['/api/tasks?state=open', 'Bearer s3cret'],
      ['/api/settings', 'Bearer s3cret'],
    ]);
    // A reload of this tab finds the token, not the code.
    expect(rec.storage.get('taskkeeper.token')).toBe('s3cret');
  });

  it('says to run `taskkeeper open` again when the code is refused, and asks the API nothing', async () => {
    const { env, rec } = fakeEnv({
      hash: '#code=spent',
      // A token from an earlier sign-in of this tab is not a reason to ignore the refusal.
      stored: 'older',
      respond: () =>
        json(401, { error: { kind: 'unauthorized', message: 'this sign-in code was already used or was never issued' } }),
    });
    const data = createDataSource(env);
    const err = await data.listTasks('open').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err).toMatchObject({ kind: 'unauthorized' });
    expect((err as DataError).message).toMatch(/expired or was already used/);
    expect((err as DataError).message).toMatch(/Run `taskkeeper open` again\./);

    const { got, listener } = recorder();
    data.subscribe(listener);
    await until(() => got.statuses.length === 2);
    expect(got.statuses[1]).toEqual({ state: 'failed', error: err });
    expect(rec.timers).toEqual([]);
    expect(rec.fetches.map((f) => f.url)).toEqual(['/ui/session']);
    expect(rec.replaced).toEqual(['/ui/']);
  });

  it('tells an unreachable daemon during the exchange from a refused code', async () => {
    const { env } = fakeEnv({ hash: '#code=c0de', respond: () => Promise.reject(new TypeError('Failed to fetch')) });
    await expect(createDataSource(env).listDesks()).rejects.toMatchObject({ kind: 'unreachable' });
  });

  it('maps each owner action to its route, method and body', async () => {
    const { env, rec } = fakeEnv({
      stored: 't',
      respond: (url) => {
        if (url.startsWith('/api/tasks/')) return json(200, { ...task(), history: [], artifacts: [] });
        if (url.endsWith('/stop')) return json(202, { id: 's 1', stopping: true });
        if (url.startsWith('/api/sessions/') || url.endsWith('/launch')) return json(200, { id: 's 1', desk: 'web' });
        if (url.startsWith('/api/desks/')) return json(200, desk({ deliverCommand: 'cat' }));
        if (url === '/api/desks') return json(200, { desks: [] });
        if (url === '/api/sessions') return json(200, { sessions: [] });
        if (url === '/api/settings/catalogue') return json(200, { settings: [CATALOGUE_ROW] });
        return json(200, { settings: { 'reminders.paused': 'true' } });
      },
    });
    const data = createDataSource(env);
    await data.getTask('a/b');
    await data.cancelTask('t1', 'not needed');
    await data.cancelTask('t1', null);
    await data.remindTask('t1');
    await data.resumeTask('t1');
    await data.listDesks();
    await data.listSessions();
    await data.pauseSession('s 1');
    await data.resumeSession('s 1');
    expect(await data.setDeliverCommand('my desk', 'tmux send-keys -t w "$(cat)"')).toEqual(desk({ deliverCommand: 'cat' }));
    await data.setDeliverCommand('web', null);
    expect(await data.launchSession('my desk')).toEqual({ id: 's 1', desk: 'web', permission: null, deliveryProblem: null });
    expect(await data.stopSession('s 1')).toBeUndefined();
    await data.answerPermission('s 1', true);
    await data.answerPermission('s 1', false, '  not in this repo ');
    await data.answerPermission('s 1', false, '   ');
    await data.answerPermission('s 1', true, undefined, 'r-1');
    expect(await data.getSettings()).toEqual({ 'reminders.paused': 'true' });
    expect(await data.getSettingsCatalogue()).toEqual([CATALOGUE_ROW]);
    await data.saveSettings({ 'reminders.ladder': '10s,20s' });
    await data.pauseReminders();
    await data.resumeReminders();
    expect(rec.fetches.map((f) => [f.method, f.url, f.body])).toEqual([
      ['GET', '/api/tasks/a%2Fb', undefined],
      ['POST', '/api/tasks/t1/cancel', '{"reason":"not needed"}'],
      ['POST', '/api/tasks/t1/cancel', '{}'],
      ['POST', '/api/tasks/t1/remind', '{}'],
      ['POST', '/api/tasks/t1/resume', '{}'],
      ['GET', '/api/desks', undefined],
      ['GET', '/api/sessions', undefined],
      ['POST', '/api/sessions/s%201/pause', '{}'],
      ['POST', '/api/sessions/s%201/resume', '{}'],
      ['PATCH', '/api/desks/my%20desk', '{"deliverCommand":"tmux send-keys -t w \\"$(cat)\\""}'],
      ['PATCH', '/api/desks/web', '{"deliverCommand":null}'],
      ['POST', '/api/desks/my%20desk/launch', '{}'],
      ['POST', '/api/sessions/s%201/stop', '{}'],
      ['POST', '/api/sessions/s%201/permission', '{"allow":true}'],
      ['POST', '/api/sessions/s%201/permission', '{"allow":false,"message":"not in this repo"}'],
      ['POST', '/api/sessions/s%201/permission', '{"allow":false}'],
      ['POST', '/api/sessions/s%201/permission', '{"allow":true,"requestId":"r-1"}'],
      ['GET', '/api/settings', undefined],
      ['GET', '/api/settings/catalogue', undefined],
      ['PUT', '/api/settings', '{"reminders.ladder":"10s,20s"}'],
      ['POST', '/api/reminders/pause', '{}'],
      ['POST', '/api/reminders/resume', '{}'],
    ]);
    expect(rec.fetches[1]?.headers['Content-Type']).toBe('application/json');
    expect(rec.fetches.find((f) => f.method === 'PATCH')?.headers).toMatchObject({
      'Content-Type': 'application/json',
      Authorization: 'Bearer t',
    });
    await expect(data.getAutostart()).rejects.toMatchObject({ kind: 'unsupported' });
  });

  it("shows the daemon's refusals of a launch and a delivery command as they come", async () => {
    const cannotStart =
      'cannot start /nonexistent/claude: No such file or directory (os error 2); install Claude Code, or point TASKKEEPER_CLAUDE at its binary';
    const { env } = fakeEnv({
      stored: 't',
      respond: (url) =>
        url.endsWith('/launch')
          ? json(500, { error: { kind: 'internal', message: cannotStart } })
          : json(400, { error: { kind: 'invalid', message: 'deliverCommand must be one line of at most 4096 bytes' } }),
    });
    const data = createDataSource(env);
    await expect(data.launchSession('web')).rejects.toMatchObject({ kind: 'internal', message: cannotStart });
    await expect(data.setDeliverCommand('web', 'a\nb')).rejects.toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('one line'),
    });
  });

  it('refuses a desk or a launched session in another shape', async () => {
    const { env } = fakeEnv({ stored: 't', respond: () => json(200, { desks: [] }) });
    const data = createDataSource(env);
    await expect(data.setDeliverCommand('web', 'cat')).rejects.toMatchObject({ kind: 'protocol' });
    await expect(data.launchSession('web')).rejects.toMatchObject({ kind: 'protocol' });
    // A desk without the field is from a daemon that cannot have changed it.
    const old = fakeEnv({ stored: 't', respond: () => json(200, { name: 'web', agent: 'claude-code', dir: '/w' }) });
    await expect(createDataSource(old.env).setDeliverCommand('web', 'cat')).rejects.toMatchObject({ kind: 'protocol' });
  });

  it("reads a session's permission request, and reads its absence (an older daemon) as none", async () => {
    const asking = session({
      activity: 'waiting-on-owner',
      headless: true,
      permission: { requestId: 'r-1', tool: 'Bash', description: 'touch x', input: '{"command":"touch x"}' },
    });
    const { permission: _, ...older } = session({ id: 's-2' });
    const { env } = fakeEnv({ stored: 't', respond: () => json(200, { sessions: [asking, older] }) });
    const sessions = await createDataSource(env).listSessions();
    expect(sessions[0]?.permission).toEqual({ requestId: 'r-1', tool: 'Bash', description: 'touch x', input: '{"command":"touch x"}' });
    expect(sessions[1]).toEqual(session({ id: 's-2' }));
    expect(sessions[1]?.permission).toBeNull();

    // A request without a description says so with null.
    const bare = fakeEnv({
      stored: 't',
      respond: () => json(200, { sessions: [session({ permission: { requestId: 'r', tool: 'Write', input: '{}' } as never })] }),
    });
    expect((await createDataSource(bare.env).listSessions())[0]?.permission).toEqual({
      requestId: 'r',
      tool: 'Write',
      description: null,
      input: '{}',
    });
  });

  it("reads why a delivery to a session did not go through, its absence (an older daemon) as none, and refuses another shape", async () => {
    const deliveryProblem = { method: 'tmux paste', why: 'bash (process 7) is in front of the pane', at: '2026-11-30T10:01:00.000Z' };
    const { deliveryProblem: _, ...older } = session({ id: 's-2' });
    const { env } = fakeEnv({ stored: 't', respond: () => json(200, { sessions: [session({ deliveryProblem }), older] }) });
    const sessions = await createDataSource(env).listSessions();
    expect(sessions[0]?.deliveryProblem).toEqual(deliveryProblem);
    expect(sessions[1]).toEqual(session({ id: 's-2' }));
    for (const wrong of ['refused', { method: 'tmux paste', why: 'x' }, { method: 1, why: 'x', at: '2026-11-30T10:01:00.000Z' }]) {
      const bad = fakeEnv({ stored: 't', respond: () => json(200, { sessions: [session({ deliveryProblem: wrong as never })] }) });
      await expect(createDataSource(bad.env).listSessions()).rejects.toMatchObject({ kind: 'protocol' });
    }
  });

  it('refuses a permission request in another shape', async () => {
    for (const permission of [true, 'Bash', { requestId: 'r-1', tool: 'Bash' }, { requestId: 'r-1', tool: 'Bash', input: { command: 'ls' } }]) {
      const { env } = fakeEnv({ stored: 't', respond: () => json(200, { sessions: [session({ permission: permission as never })] }) });
      await expect(createDataSource(env).listSessions()).rejects.toMatchObject({ kind: 'protocol' });
    }
    const answer = fakeEnv({ stored: 't', respond: () => json(200, { ...session(), permission: { tool: 'Bash' } }) });
    await expect(createDataSource(answer.env).answerPermission('s-1', true)).rejects.toMatchObject({ kind: 'protocol' });
  });

  it("shows the daemon's refusals of an answer as they come", async () => {
    const { env } = fakeEnv({
      stored: 't',
      respond: (url) =>
        url.includes('gone')
          ? json(404, { error: { kind: 'not_found', message: 'no session gone launched by this daemon' } })
          : json(409, { error: { kind: 'conflict', message: 'session s-1 has no permission request waiting' } }),
    });
    const data = createDataSource(env);
    await expect(data.answerPermission('s-1', false, 'no')).rejects.toMatchObject({
      kind: 'conflict',
      message: 'session s-1 has no permission request waiting',
    });
    await expect(data.answerPermission('gone', true)).rejects.toMatchObject({ kind: 'not_found' });
  });

  it("turns the API's error body into a DataError with its kind and message", async () => {
    const { env } = fakeEnv({
      stored: 't',
      respond: () =>
        json(400, { error: { kind: 'invalid', message: 'invalid value "soon" for reminders.stall_after: a duration' } }),
    });
    const err = await createDataSource(env).saveSettings({ 'reminders.stall_after': 'soon' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err).toMatchObject({ kind: 'invalid', message: expect.stringContaining('reminders.stall_after') });
  });

  it('says what to do about a refused or missing token', async () => {
    const refused = fakeEnv({
      stored: 'wrong',
      respond: () => json(401, { error: { kind: 'unauthorized', message: 'wrong bearer token' } }),
    });
    await expect(createDataSource(refused.env).listTasks('open')).rejects.toMatchObject({
      kind: 'unauthorized',
      message: expect.stringContaining('refused this page'),
    });

    const missing = fakeEnv({
      respond: () => json(401, { error: { kind: 'unauthorized', message: 'missing' } }),
    });
    const err = await createDataSource(missing.env).listTasks('open').catch((e: unknown) => e);
    expect(missing.rec.fetches[0]?.headers.Authorization).toBeUndefined();
    expect(err).toMatchObject({ kind: 'unauthorized', message: expect.stringContaining('taskkeeper open') });
  });

  it('reports an unreachable daemon and a non-JSON failure readably', async () => {
    const down = fakeEnv({ stored: 't', respond: () => Promise.reject(new TypeError('Failed to fetch')) });
    await expect(createDataSource(down.env).listTasks('open')).rejects.toMatchObject({ kind: 'unreachable' });

    const proxy = fakeEnv({ stored: 't', respond: () => new Response('<html>', { status: 502, statusText: 'Bad Gateway' }) });
    await expect(createDataSource(proxy.env).listTasks('open')).rejects.toMatchObject({
      kind: 'http',
      message: 'The daemon answered HTTP 502 Bad Gateway.',
    });
  });

  it('refuses bodies in another shape', async () => {
    const { env } = fakeEnv({ stored: 't', respond: () => json(200, { items: [] }) });
    await expect(createDataSource(env).listTasks('open')).rejects.toMatchObject({ kind: 'protocol' });
    const odd = fakeEnv({ stored: 't', respond: () => json(200, { tasks: [{ id: 1 }] }) });
    await expect(createDataSource(odd.env).listTasks('open')).rejects.toMatchObject({ kind: 'protocol' });
  });
});

describe('browser live feed', () => {
  it('reads the SSE stream with the bearer header, delivers tasks, notices, settings and session hints, and resyncs on connect', async () => {
    const working = task({ id: 'a', version: 2 });
    const stalled = task({ id: 'b', stalledAt: '2026-11-30T11:00:00.000Z' });
    const { env, rec } = fakeEnv({
      stored: 'tok',
      respond: () =>
        stream([
          ':\n\n',
          `event: task\ndata: ${JSON.stringify(working)}\n`,
          '\n',
          `event: notice\ndata: ${JSON.stringify({ kind: 'stalled', task: stalled })}\n\n`,
          'event: notice\ndata: {"kind":"session-ended","session":"s1","desk":"web","openTasks":2}\n\n',
          'event: notice\ndata: {"kind":"permission-asked","session":"s2","desk":"web","tool":"Bash","description":"touch x"}\n\n',
          'event: notice\ndata: {"kind":"permission-asked","session":"s2","desk":"web","tool":42,"description":null}\n\n',
          'event: notice\ndata: {"kind":"something-else","desk":"web"}\n\n',
          'event: settings\ndata: {"reminders.paused":"true","reminders.hourly_cap":"6"}\n\n',
          'event: settings\ndata: ["not","a","map"]\n\n',
          'event: settings\ndata: {"reminders.paused":{"nested":true}}\n\n',
          'event: sessions\ndata: {}\n\n',
          'event: something-new\ndata: {}\n\n',
          'event: task\ndata: not json\n\n',
          // The hint's data means nothing, whatever it is.
          'event: sessions\ndata: not json\n\n',
          'event: resync\ndata: {}\n\n',
        ]),
    });
    const { got, listener } = recorder();
    createDataSource(env).subscribe(listener);
    await until(() => rec.timers.length === 1);

    expect(rec.fetches[0]).toMatchObject({
      url: '/api/events',
      headers: { Accept: 'text/event-stream', Authorization: 'Bearer tok' },
    });
    expect(got.tasks).toEqual([working]);
    expect(got.notices).toEqual([
      { kind: 'stalled', task: stalled },
      { kind: 'session-ended', session: 's1', desk: 'web', openTasks: 2 },
      { kind: 'permission-asked', session: 's2', desk: 'web', tool: 'Bash', description: 'touch x' },
    ]);
    // The map itself is the payload; one in another shape and an unknown event are ignored.
    expect(got.settings).toEqual([{ 'reminders.paused': 'true', 'reminders.hourly_cap': '6' }]);
    expect(got.sessions).toBe(2);
    // Once on connect, once for the server's resync.
    expect(got.resyncs).toBe(2);
    // The stream ended: reconnect after a second.
    expect(got.statuses.map((s) => s.state)).toEqual(['connecting', 'live', 'reconnecting']);
    expect(rec.timers[0]?.ms).toBe(1000);
  });

  it('backs off while the daemon is down, and resets once it is back', async () => {
    let up = false;
    const { env, rec } = fakeEnv({
      stored: 't',
      respond: () => (up ? stream([]) : Promise.reject(new TypeError('Failed to fetch'))),
    });
    const { got, listener } = recorder();
    createDataSource(env).subscribe(listener);
    for (const expected of [1000, 2000, 4000, 8000, 15000, 15000]) {
      await until(() => rec.timers.length > 0);
      const timer = rec.timers.shift();
      expect(timer?.ms).toBe(expected);
      timer?.fn();
    }
    up = true;
    await until(() => rec.timers.length > 0);
    rec.timers.shift()?.fn();
    await until(() => rec.timers.length > 0);
    expect(rec.timers[0]?.ms).toBe(1000);
    expect(got.statuses.filter((s) => s.state === 'live')).toHaveLength(1);
  });

  it('stops for good on a refused token, and stops when unsubscribed', async () => {
    const refused = fakeEnv({ stored: 'bad', respond: () => json(401, { error: { kind: 'unauthorized', message: 'no' } }) });
    const a = recorder();
    createDataSource(refused.env).subscribe(a.listener);
    await until(() => a.got.statuses.length === 2);
    expect(a.got.statuses[1]).toMatchObject({ state: 'failed', error: { kind: 'unauthorized' } });
    expect(refused.rec.timers).toEqual([]);

    const ok = fakeEnv({ stored: 't', respond: () => stream([]) });
    const b = recorder();
    const stop = createDataSource(ok.env).subscribe(b.listener);
    stop();
    await new Promise((r) => setTimeout(r, 10));
    expect(ok.rec.timers).toEqual([]);
  });
});

describe('tauri transport', () => {
  it('invokes the contract commands with camelCase args and never touches fetch or the fragment', async () => {
    const detail = { ...task({ id: 'a' }), history: [], artifacts: [] };
    const { env, rec } = fakeEnv({
      isTauri: true,
      hash: '#token=x',
      invoke: (cmd) => {
        switch (cmd) {
          case 'list_tasks':
            return [task({ id: 'a' })];
          case 'get_task':
            return detail;
          case 'cancel_task':
          case 'remind_task':
          case 'resume_task':
            return task({ id: 'a' });
          case 'list_desks':
          case 'list_sessions':
            return [];
          case 'pause_session':
          case 'resume_session':
          case 'launch_session':
          case 'answer_permission':
            return { id: 's1', desk: 'web' };
          case 'set_deliver_command':
            return desk({ deliverCommand: 'cat' });
          case 'stop_session':
            return null;
          case 'get_settings':
          case 'save_settings':
            return { 'reminders.paused': 'false' };
          case 'get_settings_catalogue':
            return { settings: [CATALOGUE_ROW] };
          case 'pause_reminders':
            return undefined;
          case 'resume_reminders':
            return { settings: { 'reminders.paused': 'false' } };
          case 'get_autostart':
            return true;
          case 'set_autostart':
            return { enabled: false };
          default:
            return undefined;
        }
      },
    });
    const data = createDataSource(env);
    expect(data.transport).toBe('tauri');
    expect(data.canAutostart).toBe(true);
    expect((await data.listTasks('open')).map((t) => t.id)).toEqual(['a']);
    expect(await data.getTask('a')).toEqual(detail);
    await data.cancelTask('a', null);
    await data.remindTask('a');
    await data.resumeTask('a');
    await data.listDesks();
    await data.listSessions();
    await data.pauseSession('s1');
    await data.resumeSession('s1');
    expect((await data.setDeliverCommand('web', 'cat')).deliverCommand).toBe('cat');
    await data.setDeliverCommand('web', null);
    expect(await data.launchSession('web')).toEqual({ id: 's1', desk: 'web', permission: null, deliveryProblem: null });
    expect(await data.stopSession('s1')).toBeUndefined();
    expect(await data.answerPermission('s1', true)).toEqual({ id: 's1', desk: 'web', permission: null, deliveryProblem: null });
    await data.answerPermission('s1', false, 'use the test runner instead');
    await data.answerPermission('s1', false, '');
    await data.answerPermission('s1', false, 'no', 'r-2');
    await data.getSettings();
    expect(await data.getSettingsCatalogue()).toEqual([CATALOGUE_ROW]);
    await data.saveSettings({ 'reminders.hourly_cap': '4' });
    // No answer from pause_reminders: the map is read back.
    expect(await data.pauseReminders()).toEqual({ 'reminders.paused': 'false' });
    expect(await data.resumeReminders()).toEqual({ 'reminders.paused': 'false' });
    expect(await data.getAutostart()).toBe(true);
    expect(await data.setAutostart(false)).toBe(false);
    await data.reportRendered(1);
    await data.reportFirstFrame(12.4);
    await data.reportFirstFrame(31.6, 2400.2);
    expect(rec.invokes).toEqual([
      { cmd: 'list_tasks', args: { state: 'open' } },
      { cmd: 'get_task', args: { id: 'a' } },
      { cmd: 'cancel_task', args: { id: 'a', reason: null } },
      { cmd: 'remind_task', args: { id: 'a' } },
      { cmd: 'resume_task', args: { id: 'a' } },
      { cmd: 'list_desks', args: undefined },
      { cmd: 'list_sessions', args: undefined },
      { cmd: 'pause_session', args: { id: 's1' } },
      { cmd: 'resume_session', args: { id: 's1' } },
      { cmd: 'set_deliver_command', args: { name: 'web', command: 'cat' } },
      { cmd: 'set_deliver_command', args: { name: 'web', command: null } },
      { cmd: 'launch_session', args: { desk: 'web' } },
      { cmd: 'stop_session', args: { id: 's1' } },
      { cmd: 'answer_permission', args: { id: 's1', allow: true, message: null } },
      { cmd: 'answer_permission', args: { id: 's1', allow: false, message: 'use the test runner instead' } },
      { cmd: 'answer_permission', args: { id: 's1', allow: false, message: null } },
      { cmd: 'answer_permission', args: { id: 's1', allow: false, message: 'no', requestId: 'r-2' } },
      { cmd: 'get_settings', args: undefined },
      { cmd: 'get_settings_catalogue', args: undefined },
      { cmd: 'save_settings', args: { changes: { 'reminders.hourly_cap': '4' } } },
      { cmd: 'pause_reminders', args: undefined },
      { cmd: 'get_settings', args: undefined },
      { cmd: 'resume_reminders', args: undefined },
      { cmd: 'get_autostart', args: undefined },
      { cmd: 'set_autostart', args: { enabled: false } },
      { cmd: 'ui_rendered', args: { count: 1 } },
      { cmd: 'ui_first_frame', args: { pageMs: 12 } },
      { cmd: 'ui_first_frame', args: { pageMs: 32, hiddenMs: 2400 } },
    ]);
    expect(rec.fetches).toEqual([]);
    expect(rec.storage.size).toBe(0);
  });

  it('maps {kind, message} rejections and plain-string rejections', async () => {
    const typed = fakeEnv({
      isTauri: true,
      invoke: () => Promise.reject({ kind: 'conflict', message: 'task t1 is completed' }),
    });
    await expect(createDataSource(typed.env).cancelTask('t1', null)).rejects.toMatchObject({
      kind: 'conflict',
      message: 'task t1 is completed',
    });

    const launch = fakeEnv({
      isTauri: true,
      invoke: () => Promise.reject({ kind: 'invalid', message: 'desk notes is a generic desk; Taskkeeper launches headless sessions for claude-code desks only' }),
    });
    await expect(createDataSource(launch.env).launchSession('notes')).rejects.toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('claude-code desks only'),
    });

    const denied = fakeEnv({ isTauri: true, invoke: () => Promise.reject('command list_tasks not allowed') });
    await expect(createDataSource(denied.env).listTasks('open')).rejects.toMatchObject({
      kind: 'ipc',
      message: 'command list_tasks not allowed',
    });
  });

  it('follows the Tauri events, resyncs once listening, and unlistens', async () => {
    const handlers = new Map<string, (payload: unknown) => void>();
    const { env, rec } = fakeEnv({
      isTauri: true,
      listen: (event, handler) => {
        handlers.set(event, handler);
        return Promise.resolve(() => void rec.unlistened.push(event));
      },
    });
    const { got, listener } = recorder();
    const stop = createDataSource(env).subscribe(listener);
    await until(() => got.resyncs === 1);
    expect(rec.listens).toEqual(['taskkeeper://task', 'taskkeeper://notice', 'taskkeeper://settings', 'taskkeeper://sessions', 'taskkeeper://navigate']);
    handlers.get('taskkeeper://task')?.(task({ id: 'x' }));
    handlers.get('taskkeeper://task')?.({ nonsense: true });
    handlers.get('taskkeeper://notice')?.({ kind: 'session-ended', session: 's', desk: 'web', openTasks: 1 });
    handlers.get('taskkeeper://notice')?.({ kind: 'permission-asked', session: 's', desk: 'web', tool: 'Write', description: null });
    handlers.get('taskkeeper://notice')?.({ kind: 'permission-asked', session: 's', desk: 'web' });
    expect(got.tasks.map((t) => t.id)).toEqual(['x']);
    expect(got.notices.map((n) => n.kind)).toEqual(['session-ended', 'permission-asked']);
    expect(got.notices[1]).toEqual({ kind: 'permission-asked', session: 's', desk: 'web', tool: 'Write', description: null });
    handlers.get('taskkeeper://settings')?.({ 'reminders.paused': 'false', 'reminders.hourly_cap': 6 });
    handlers.get('taskkeeper://settings')?.('paused');
    handlers.get('taskkeeper://settings')?.(null);
    expect(got.settings).toEqual([{ 'reminders.paused': 'false', 'reminders.hourly_cap': '6' }]);
    // The session hint: `{}` from the app, but any payload (or none) is the same hint.
    handlers.get('taskkeeper://sessions')?.({});
    handlers.get('taskkeeper://sessions')?.(null);
    expect(got.sessions).toBe(2);
    handlers.get('taskkeeper://navigate')?.('settings');
    handlers.get('taskkeeper://navigate')?.({ task: 't-9' });
    handlers.get('taskkeeper://navigate')?.(42);
    expect(got.navigations).toEqual([
      { kind: 'view', view: 'settings' },
      { kind: 'task', id: 't-9' },
    ]);
    expect(got.statuses.map((s) => s.state)).toEqual(['connecting', 'live']);
    stop();
    expect(rec.unlistened).toEqual(['taskkeeper://task', 'taskkeeper://notice', 'taskkeeper://settings', 'taskkeeper://sessions', 'taskkeeper://navigate']);
  });

  it('reports a feed that cannot listen (a missing capability) as failed', async () => {
    const { env } = fakeEnv({ isTauri: true, listen: () => Promise.reject('event.listen not allowed') });
    const { got, listener } = recorder();
    createDataSource(env).subscribe(listener);
    await until(() => got.statuses.length === 2);
    expect(got.statuses[1]).toMatchObject({ state: 'failed', error: { kind: 'ipc' } });
  });
});

describe('agents', () => {
  const agent = {
    agent: 'claude-code',
    name: 'Claude Code',
    found: true,
    connected: true,
    working: true,
    ok: [],
    problems: [],
    canUndo: true,
    files: ['/h/.claude/settings.json', '/h/.claude.json'],
  };
  const change = { changes: ['/h/.claude.json: added the MCP server'], agent };

  it('lists, connects (forced only when asked) and disconnects over the owner API', async () => {
    const { env, rec } = fakeEnv({
      stored: 't',
      respond: (url) => json(200, url === '/api/agents' ? { agents: [agent] } : change),
    });
    const data = createDataSource(env);
    expect(await data.listAgents()).toEqual([agent]);
    expect(await data.connectAgent('claude-code')).toEqual(change);
    await data.connectAgent('claude-code', true);
    await data.disconnectAgent('claude-code');
    expect(rec.fetches.map((f) => [f.method, f.url, f.body])).toEqual([
      ['GET', '/api/agents', undefined],
      ['POST', '/api/agents/claude-code/connect', '{}'],
      ['POST', '/api/agents/claude-code/connect', '{"force":true}'],
      ['POST', '/api/agents/claude-code/disconnect', '{}'],
    ]);
  });

  it('invokes the same through the app, and refuses an agent in another shape', async () => {
    const { env, rec } = fakeEnv({
      isTauri: true,
      invoke: (cmd) => (cmd === 'list_agents' ? [agent, { agent: 'x' }] : change),
    });
    const data = createDataSource(env);
    await expect(data.listAgents()).rejects.toMatchObject({ kind: 'protocol' });
    expect(await data.connectAgent('claude-code')).toEqual(change);
    await data.disconnectAgent('claude-code');
    expect(rec.invokes).toEqual([
      { cmd: 'list_agents', args: undefined },
      { cmd: 'connect_agent', args: { agent: 'claude-code', force: false } },
      { cmd: 'disconnect_agent', args: { agent: 'claude-code' } },
    ]);
  });
});

describe('the network listener', () => {
  const listening = {
    state: 'listening',
    address: '0.0.0.0:7718',
    url: 'https://box.example.net:7718',
    tls: 'self-signed',
    certificateSha256: 'AB:CD',
    warning: null,
    error: null,
  };

  it('is read from /api/network in a browser and get_network in the app', async () => {
    const http = fakeEnv({ stored: 't', respond: () => json(200, listening) });
    expect(await createDataSource(http.env).getNetwork()).toEqual(listening);
    expect(http.rec.fetches.map((f) => [f.method, f.url])).toEqual([['GET', '/api/network']]);
    const app = fakeEnv({ isTauri: true, invoke: () => ({ ...listening, state: 'off', url: null }) });
    expect((await createDataSource(app.env).getNetwork()).state).toBe('off');
    expect(app.rec.invokes).toEqual([{ cmd: 'get_network', args: undefined }]);
  });

  it('refuses another shape', async () => {
    for (const bad of [{ ...listening, state: 'maybe' }, { ...listening, url: 7 }, null]) {
      const { env } = fakeEnv({ isTauri: true, invoke: () => bad });
      await expect(createDataSource(env).getNetwork()).rejects.toMatchObject({ kind: 'protocol' });
    }
  });
});

describe('notices', () => {
  const asked = { kind: 'permission-asked', session: 's1', desk: 'web', tool: 'Bash', description: 'touch x' };

  it('accepts every kind the daemon sends, in its shape', () => {
    expect(isNotice({ kind: 'stalled', task: task({ id: 'a' }) })).toBe(true);
    expect(isNotice({ kind: 'session-ended', session: 's1', desk: 'web', openTasks: 0 })).toBe(true);
    expect(isNotice(asked)).toBe(true);
    expect(isNotice({ ...asked, description: null })).toBe(true);
    expect(isNotice({ ...asked, tool: 'mcp__server__tool' })).toBe(true);
    const counts = { stalled: 1, finished: 2, waitingOnOwner: 0, ackPending: 3, reminders: 4 };
    expect(isNotice({ kind: 'digest', counts })).toBe(true);
    expect(isNotice({ kind: 'digest', counts: { ...counts, reminders: '4' } })).toBe(false);
    expect(isNotice({ kind: 'digest' })).toBe(false);
  });

  it('knows the kinds only the desktop shows, and lists none of them', () => {
    for (const kind of ['blocked', 'finished']) {
      expect(isDesktopOnlyNotice({ kind, task: task({ id: 'a' }) })).toBe(true);
      expect(isNotice({ kind, task: task({ id: 'a' }) })).toBe(false);
      expect(isDesktopOnlyNotice({ kind, task: { id: 'a' } })).toBe(false);
    }
    expect(isDesktopOnlyNotice({ kind: 'stalled', task: task({ id: 'a' }) })).toBe(false);
  });

  it('refuses a notice missing what it is shown with, or of an unknown kind', () => {
    expect(isNotice({ ...asked, description: undefined })).toBe(false);
    expect(isNotice({ ...asked, tool: undefined })).toBe(false);
    expect(isNotice({ ...asked, desk: 3 })).toBe(false);
    expect(isNotice({ ...asked, session: null })).toBe(false);
    expect(isNotice({ ...asked, description: { text: 'x' } })).toBe(false);
    expect(isNotice({ kind: 'stalled', task: { id: 'a' } })).toBe(false);
    expect(isNotice({ kind: 'session-ended', session: 's1', desk: 'web' })).toBe(false);
    expect(isNotice({ kind: 'permission-granted', session: 's1' })).toBe(false);
    expect(isNotice(null)).toBe(false);
    expect(isNotice('permission-asked')).toBe(false);
  });
});

describe('settings answers', () => {
  it('accepts the map bare or wrapped, and numbers or booleans as text', () => {
    expect(expectSettings({ a: '1' })).toEqual({ a: '1' });
    expect(expectSettings({ settings: { a: 2, b: true } })).toEqual({ a: '2', b: 'true' });
    expect(() => expectSettings({ a: {} })).toThrow(DataError);
    expect(() => expectSettings([])).toThrow(DataError);
  });
});
