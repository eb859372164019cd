import { describe, expect, it } from 'vitest';
import { createDataSource, DataError, type Env } from '../src/data';
import { task } from './fixtures';

interface Recorded {
  fetches: { url: string; headers: Record<string, string> }[];
  invokes: { cmd: string; args: Record<string, unknown> | undefined }[];
  replaced: string[];
  storage: Map<string, string>;
}

function fakeEnv(opts: {
  isTauri?: boolean;
  hash?: string;
  stored?: string;
  respond?: (url: string) => Response | Promise<Response>;
  invoke?: (cmd: string) => unknown;
}): { env: Env; rec: Recorded } {
  const rec: Recorded = { fetches: [], invokes: [], replaced: [], storage: new Map() };
  if (opts.stored !== undefined) rec.storage.set('taskkeeper.token', opts.stored);
  const env: Env = {
    isTauri: opts.isTauri ?? false,
    invoke: async (cmd, args) => {
      rec.invokes.push({ cmd, args });
      return opts.invoke ? opts.invoke(cmd) : undefined;
    },
    fetch: async (url, init) => {
      rec.fetches.push({ url, headers: { ...(init?.headers as Record<string, string>) } });
      if (!opts.respond) throw new Error('no fetch expected');
      return opts.respond(url);
    },
    location: { hash: opts.hash ?? '', pathname: '/ui/', search: '' },
    history: { replaceState: (_d, _u, url) => rec.replaced.push(url ?? '') },
    sessionStorage: {
      getItem: (k) => rec.storage.get(k) ?? null,
      setItem: (k, v) => void rec.storage.set(k, v),
    },
  };
  return { env, rec };
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

describe('browser transport', () => {
  it('takes the token from the fragment, stores it, removes it, and sends it as a bearer', async () => {
    const { env, rec } = fakeEnv({ hash: '#token=s3cret', respond: () => json(200, { tasks: [task()] }) });
    const data = createDataSource(env);
    expect(data.transport).toBe('http');
    expect(rec.storage.get('taskkeeper.token')).toBe('s3cret');
    expect(rec.replaced).toEqual(['/ui/']);

    const tasks = await data.listOpenTasks();
    expect(tasks.map((t) => t.id)).toEqual(['task-1']);
    expect(rec.fetches).toEqual([
      { url: '/api/tasks?state=open', headers: { Accept: 'application/json', Authorization: 'Bearer s3cret' } },
    ]);
  });

  it('finds the token in sessionStorage after a reload', async () => {
    const { env, rec } = fakeEnv({ stored: 'kept', respond: () => json(200, { tasks: [] }) });
    await createDataSource(env).listOpenTasks();
    expect(rec.replaced).toEqual([]);
    expect(rec.fetches[0]?.headers.Authorization).toBe('Bearer kept');
  });

  it('turns the API error body into a DataError with its kind', async () => {
    const { env } = fakeEnv({
      stored: 'wrong',
      respond: () => json(401, { error: { kind: 'unauthorized', message: 'bad token' } }),
    });
    const err = await createDataSource(env).listOpenTasks().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataError);
    expect(err).toMatchObject({ kind: 'unauthorized', message: 'bad token' });
  });

  it('tells how to get a token when the page was opened without one', async () => {
    const { env, rec } = fakeEnv({
      respond: () => json(401, { error: { kind: 'unauthorized', message: 'missing or wrong owner token' } }),
    });
    const err = await createDataSource(env).listOpenTasks().catch((e: unknown) => e);
    expect(rec.fetches[0]?.headers.Authorization).toBeUndefined();
    expect(err).toMatchObject({ kind: 'unauthorized', message: expect.stringContaining('taskkeeper serve') });
  });

  it('reports an unreachable daemon and a non-JSON failure readably', async () => {
    const down = fakeEnv({ stored: 't', respond: () => Promise.reject(new TypeError('Failed to fetch')) });
    await expect(createDataSource(down.env).listOpenTasks()).rejects.toMatchObject({ kind: 'unreachable' });

    const proxy = fakeEnv({ stored: 't', respond: () => new Response('<html>', { status: 502, statusText: 'Bad Gateway' }) });
    await expect(createDataSource(proxy.env).listOpenTasks()).rejects.toMatchObject({
      kind: 'http',
      message: 'The daemon answered HTTP 502 Bad Gateway.',
    });
  });

  it('refuses a body without a task list', async () => {
    const { env } = fakeEnv({ stored: 't', respond: () => json(200, { items: [] }) });
    await expect(createDataSource(env).listOpenTasks()).rejects.toMatchObject({ kind: 'protocol' });
  });
});

describe('tauri transport', () => {
  it('invokes list_open_tasks and never touches fetch or the fragment', async () => {
    const { env, rec } = fakeEnv({ isTauri: true, hash: '#token=x', invoke: () => [task({ id: 'a' })] });
    const data = createDataSource(env);
    expect(data.transport).toBe('tauri');
    expect((await data.listOpenTasks()).map((t) => t.id)).toEqual(['a']);
    await data.reportRendered(1);
    expect(rec.invokes).toEqual([
      { cmd: 'list_open_tasks', args: undefined },
      { cmd: 'ui_rendered', args: { count: 1 } },
    ]);
    expect(rec.fetches).toEqual([]);
    expect(rec.storage.size).toBe(0);
  });

  it('maps {kind, message} rejections and plain-string rejections', async () => {
    const typed = fakeEnv({
      isTauri: true,
      invoke: () => Promise.reject({ kind: 'store', message: 'database is locked' }),
    });
    await expect(createDataSource(typed.env).listOpenTasks()).rejects.toMatchObject({
      kind: 'store',
      message: 'database is locked',
    });

    const denied = fakeEnv({ isTauri: true, invoke: () => Promise.reject('command list_open_tasks not allowed') });
    await expect(createDataSource(denied.env).listOpenTasks()).rejects.toMatchObject({
      kind: 'ipc',
      message: 'command list_open_tasks not allowed',
    });
  });
});
