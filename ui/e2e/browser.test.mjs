// Browser tests of the web UI (issue 6 "Proof"): real headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core) against a real `taskkeeper serve --ui` that
// each test starts on a free port with a fresh data directory. Tasks come in over A2A, the
// worker's endings through the owner API, and what the UI does is checked where it lands:
// the asker's A2A view and the `taskkeeper` CLI. Screenshots go to tests/artifacts/browser/.
//
// Needs: TASKKEEPER_BIN (the built `taskkeeper`; the Makefile's test-browser target sets it),
// a built ui/dist, and chromium (CHROMIUM overrides the path).

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, link, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const UI_DIST = resolve(here, '../dist');
const ARTIFACTS = resolve(here, '../../tests/artifacts/browser');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const BIN = process.env.TASKKEEPER_BIN;
const TOKEN = randomBytes(32).toString('hex');
const run = promisify(execFile);

for (const [what, path, fix] of [
  ['TASKKEEPER_BIN', BIN, 'build it (cargo build -p taskkeeper-cli) and set TASKKEEPER_BIN, or run `make test-browser`'],
  ['the built UI', join(UI_DIST, 'index.html'), 'run `npm run build` in ui/'],
  ['chromium', CHROMIUM, 'install Debian\'s chromium package or set CHROMIUM'],
]) {
  if (!path || !existsSync(path)) throw new Error(`missing ${what} (${path ?? 'unset'}): ${fix}`);
}

/** A `taskkeeper serve --ui` child on a free port, with its own data directory. */
class Daemon {
  static async start({ ui = true, env = {}, bin = BIN } = {}) {
    const dir = await mkdtemp(join(tmpdir(), 'tk-browser-'));
    const flags = ui ? ['--ui', UI_DIST] : [];
    const child = spawn(bin, ['serve', ...flags, '--port', '0', '--data-dir', join(dir, 'data')], {
      env: { ...process.env, TASKKEEPER_TOKEN: TOKEN, RUST_LOG: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b) => (stderr += b));
    const base = await new Promise((ok, fail) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`the daemon did not start in 30 s: ${stderr}`)), 30_000);
      child.stdout.on('data', (b) => {
        out += b;
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          ok(m[1]);
        }
      });
      child.on('exit', (code) => fail(new Error(`the daemon exited (${code}): ${stderr}`)));
    });
    return new Daemon(child, dir, base);
  }

  constructor(child, dir, base) {
    this.child = child;
    this.dir = dir;
    this.base = base;
  }

  async stop() {
    if (this.child.exitCode === null) {
      const exited = new Promise((ok) => this.child.once('exit', ok));
      this.child.kill('SIGTERM');
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  /** An owner API call; returns the parsed body, failing on an unexpected status. */
  async api(method, path, body, { token = TOKEN, expect = [200, 201, 204] } = {}) {
    const res = await fetch(this.base + path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    assert.ok(expect.includes(res.status), `${method} ${path}: HTTP ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  /** An A2A v1.0 JSON-RPC call at a desk's endpoint, as an asker. */
  async a2a(desk, method, params, token) {
    const res = await fetch(`${this.base}/a2a/${desk}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = await res.json();
    assert.ok(body.result, `${method}: ${JSON.stringify(body)}`);
    return body.result;
  }

  async send(desk, text, askerToken) {
    const result = await this.a2a(
      desk,
      'SendMessage',
      {
        message: { messageId: randomBytes(8).toString('hex'), role: 'ROLE_USER', parts: [{ text }] },
        configuration: { returnImmediately: true },
      },
      askerToken,
    );
    return result.task;
  }

  async desk(name, agent = 'claude-code') {
    const dir = join(this.dir, 'work', name);
    await mkdir(dir, { recursive: true });
    await this.api('POST', '/api/desks', { name, dir, agent });
    return dir;
  }

  async asker(name) {
    return (await this.api('POST', '/api/askers', { name })).token;
  }

  /** The `taskkeeper` CLI against this daemon. */
  async cli(...args) {
    return this.cliAs(TOKEN, ...args);
  }

  async cliAs(token, ...args) {
    const { stdout } = await run(BIN, args, {
      env: { ...process.env, TASKKEEPER_URL: this.base, TASKKEEPER_TOKEN: token },
    });
    return stdout.trim();
  }

  /** The asyncRewake waiter's long poll: what Taskkeeper puts into the idle session next. */
  async wait(session, cwd) {
    const res = await fetch(`${this.base}/hooks/claude-code/wait`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ session_id: session, hook_event_name: 'Stop', cwd }),
      signal: AbortSignal.timeout(30_000),
    });
    assert.equal(res.status, 200);
    return res.json();
  }

  /** One Claude Code hook, as `taskkeeper hook` forwards it. */
  async hook(session, event, cwd, extra = {}) {
    const res = await fetch(`${this.base}/hooks/claude-code`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        session_id: session,
        hook_event_name: event,
        cwd,
        transcript_path: '/tmp/t.jsonl',
        permission_mode: 'default',
        ...extra,
      }),
    });
    assert.equal(res.status, 200, `${event}: ${await res.text()}`);
  }
}

let browser;
let daemon;
let page;
let problems;
let profile;

before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  profile = await mkdtemp(join(tmpdir(), 'tk-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    // The tray window's size: everything must fit and scroll there.
    viewport: { width: 420, height: 600 },
    colorScheme: 'light',
  });
});

after(async () => {
  await browser?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

beforeEach(async () => {
  daemon = await Daemon.start();
  page = await browser.newPage();
  problems = [];
  // Console errors, page errors and CSP violations fail the test unless it expects them.
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
});

afterEach(async () => {
  await page?.close();
  await daemon?.stop();
});

/** The address `taskkeeper open` makes: a one-time sign-in code, never the owner token. */
async function openAddress() {
  const url = await daemon.cli('open', '--print');
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/ui\/#code=[0-9a-f]{64}$/);
  assert.ok(!url.includes(TOKEN), 'the owner token is not in the address');
  return url;
}

/** Opens the UI the way the owner does: the address `taskkeeper open` makes. */
async function openUi(path = '') {
  const url = await openAddress();
  const response = await page.goto(url);
  assert.equal(response.status(), 200);
  if (path) await page.evaluate((p) => (window.location.hash = p), path);
  await page.locator('[data-live="live"]').waitFor();
  return response;
}

/** What the 420×600 window shows; `full` for the whole scrolled page. */
const shot = (name, { full = false } = {}) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: full });
const row = (text) => page.locator('[data-task-id]', { hasText: text });
const noProblems = (allowed = []) =>
  assert.deepEqual(
    problems.filter((p) => !allowed.some((a) => a.test(p))),
    [],
    'console errors or CSP violations',
  );

test('the page loads with its security headers and says what to do when empty', async () => {
  const response = await openUi();
  const headers = response.headers();
  assert.equal(
    headers['content-security-policy'],
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
  );
  assert.equal(headers['x-content-type-options'], 'nosniff');
  assert.equal(headers['content-type'], 'text/html; charset=utf-8');
  // The sign-in code left the address bar (and so history and bookmarks).
  assert.equal(page.url(), `${daemon.base}/ui/`);

  await page.getByRole('heading', { name: 'No open tasks.' }).waitFor();
  assert.match(await page.locator('.empty').innerText(), /taskkeeper task add DESK/);
  await shot('empty-open');

  await page.getByRole('link', { name: 'Recent' }).click();
  await page.getByRole('heading', { name: 'Nothing ended recently.' }).waitFor();
  await page.getByRole('link', { name: 'Desks' }).click();
  await page.getByRole('heading', { name: 'No desks yet.' }).waitFor();
  assert.match(await page.locator('[data-connect="claude-code"]').innerText(), /taskkeeper connect claude-code/);
  await shot('empty-desks');

  // A reload keeps the session (the token moved to sessionStorage).
  await page.reload();
  await page.getByRole('heading', { name: 'No desks yet.' }).waitFor();
  noProblems();
});

test('lists tasks created over A2A, grouped by desk, with state, asker and queue position', async () => {
  await daemon.desk('web');
  await daemon.desk('api');
  const planner = await daemon.asker('planner');
  const first = await daemon.send('web', 'Add a --json flag\n\nThe list command should print JSON.', planner);
  const second = await daemon.send('web', 'Then write the docs', planner);
  await daemon.send('api', 'Rate-limit the login endpoint', planner);
  assert.equal(first.status.state, 'TASK_STATE_WORKING');
  assert.equal(second.status.state, 'TASK_STATE_SUBMITTED');

  await openUi();
  await row('Rate-limit the login endpoint').waitFor();
  assert.deepEqual(await page.locator('.desk-name').allInnerTexts(), ['api\n1', 'web\n2']);
  const working = row('Add a --json flag');
  assert.match(await working.innerText(), /working/);
  assert.match(await working.innerText(), /from planner/);
  assert.match(await working.innerText(), /just now/);
  // Only the request's first line is in the list.
  assert.doesNotMatch(await working.innerText(), /print JSON/);
  assert.match(await row('Then write the docs').innerText(), /queued #1/);
  assert.equal(await page.locator('.summary').innerText(), '3 open');
  await shot('open-list');

  await page.emulateMedia({ colorScheme: 'dark' });
  await shot('open-list-dark');
  const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  assert.equal(bg, 'rgb(27, 28, 30)', 'the dark palette follows the system');
  await page.emulateMedia({ colorScheme: 'light' });
  noProblems();
});

test('updates live when a task changes, without reloading', async () => {
  await daemon.desk('web');
  const planner = await daemon.asker('planner');
  const first = await daemon.send('web', 'Add a --json flag', planner);
  await daemon.send('web', 'Then write the docs', planner);
  await openUi();
  await row('Then write the docs').waitFor();
  await page.evaluate(() => (window.__sameDocument = true));

  // A new task appears.
  await daemon.send('web', 'And a changelog entry', planner);
  await row('And a changelog entry').waitFor();
  assert.match(await row('And a changelog entry').innerText(), /queued #2/);

  // The worker ends the first: it leaves the open list, and the queue moves up.
  await daemon.api('POST', `/api/tasks/${first.id}/update`, { status: 'done', text: 'Added --json with a test.' });
  await row('Add a --json flag').waitFor({ state: 'detached' });
  await page.waitForFunction(() =>
    [...document.querySelectorAll('[data-task-id]')].some((r) => /working/.test(r.textContent) && /docs/.test(r.textContent)),
  );
  await page.waitForFunction(() =>
    [...document.querySelectorAll('[data-task-id]')].some((r) => /queued #1/.test(r.textContent) && /changelog/.test(r.textContent)),
  );

  // Recent shows how it ended; the asker's acknowledgement shows up live too.
  await page.getByRole('link', { name: 'Recent' }).click();
  const ended = row('Add a --json flag');
  await ended.waitFor();
  // The daemon's label, the word the CLI prints too.
  assert.match(await ended.innerText(), /completed/);
  assert.match(await ended.innerText(), /Added --json with a test\./);
  assert.match(await ended.innerText(), /not acknowledged/);
  await daemon.a2a('web', 'AckTask', { id: first.id }, planner);
  await page.waitForFunction(() => document.querySelector('.ack.is-acked') !== null);
  await shot('recent');

  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
  noProblems();
});

test('a cancel from the UI reaches the asker; the detail is reached and left by keyboard', async () => {
  await daemon.desk('web');
  const planner = await daemon.asker('planner');
  const task = await daemon.send('web', 'Migrate the database\n\nKeep a backup first.', planner);
  await openUi();
  const link = page.locator(`[data-task-link="${task.id}"]`);
  await link.waitFor();

  // Tab reaches the row after the header's links; Enter opens it; Escape comes back to it.
  for (let i = 0; i < 10 && !(await link.evaluate((el) => el === document.activeElement)); i++) {
    await page.keyboard.press('Tab');
  }
  assert.equal(await link.evaluate((el) => el === document.activeElement), true, 'Tab reaches the task');
  const outline = await link.evaluate((el) => getComputedStyle(el).outlineStyle);
  assert.notEqual(outline, 'none', 'focus is visible');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Migrate the database' }).waitFor();
  assert.match(await page.locator('.history').innerText(), /Keep a backup first\./);
  assert.match(await page.locator('.facts').innerText(), /Reminders\s+none sent/);
  await shot('detail', { full: true });
  await page.keyboard.press('Escape');
  await link.waitFor();
  await page.waitForFunction((id) => document.activeElement?.getAttribute('data-task-link') === id, task.id);

  await page.keyboard.press('Enter');
  await page.getByRole('button', { name: 'Cancel task…' }).click();
  await page.getByLabel(/Cancel this task\?/).fill('Not needed any more');
  await shot('detail-cancel');
  await page.keyboard.press('Enter');
  await page.getByText('Canceled; the asker is told.').waitFor();
  await page.getByRole('button', { name: 'Remind now' }).waitFor({ state: 'detached' });

  const seen = await daemon.a2a('web', 'GetTask', { id: task.id }, planner);
  assert.equal(seen.status.state, 'TASK_STATE_CANCELED');
  assert.match(JSON.stringify(seen.status.message), /Not needed any more/);

  await page.keyboard.press('Escape');
  await page.getByRole('heading', { name: 'No open tasks.' }).waitFor();
  noProblems();
});

test('settings saved in the UI change `taskkeeper settings get`', async () => {
  await openUi('#/settings');
  const ladder = page.getByLabel('Further reminders');
  await ladder.waitFor();
  assert.equal(await ladder.inputValue(), '1m,2m,5m,10m');
  await ladder.fill('10s,20s,30s');
  await page.getByLabel('Reminders per hour').fill('4');
  await page.getByLabel('Desktop notifications').uncheck();
  // In a browser there is no autostart to switch.
  assert.equal(await page.getByLabel('Start at login').count(), 0);
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('Saved 3 changes; in effect now.').waitFor();
  await shot('settings');
  await shot('settings-full', { full: true });

  assert.equal(await daemon.cli('settings', 'get', 'reminders.ladder'), '10s,20s,30s');
  assert.equal(await daemon.cli('settings', 'get', 'reminders.hourly_cap'), '4');
  assert.equal(await daemon.cli('settings', 'get', 'notifications.enabled'), 'false');

  // A change from elsewhere (the CLI) shows after the next re-read, e.g. on reload.
  await daemon.cli('settings', 'set', 'tasks.keep_ended', '3d');
  await page.reload();
  await page.locator('[data-live="live"]').waitFor();
  assert.equal(await page.getByLabel('Keep ended tasks for').inputValue(), '3d');
  noProblems();
});

test('settings changed elsewhere show in the open settings view at once, and a field being edited keeps its edit', async () => {
  await openUi('#/settings');
  const ladder = page.getByLabel('Further reminders');
  await ladder.waitFor();
  // Marks this page: still there at the end means nothing reloaded it.
  await page.evaluate(() => (window.__sameDocument = true));
  await ladder.fill('10s,20s,30s');

  // The CLI and the owner API change other settings while the owner is typing.
  await daemon.cli('settings', 'set', 'tasks.keep_ended', '3d');
  await daemon.api('PUT', '/api/settings', { 'reminders.paused': 'true', 'reminders.ladder': '1m,2m' });
  const keepEnded = page.getByLabel('Keep ended tasks for');
  await page.waitForFunction(() => document.querySelector('[name="tasks.keep_ended"]')?.value === '3d');
  assert.equal(await keepEnded.inputValue(), '3d');
  await page.getByText('All reminders are paused.').waitFor();
  assert.equal(await page.getByLabel('Pause all reminders').isChecked(), true);
  // The field being edited keeps the edit, even though the ladder changed elsewhere too.
  assert.equal(await ladder.inputValue(), '10s,20s,30s');
  await shot('settings-changed-elsewhere');

  // Saving sends the edit alone: the pause made elsewhere is not undone.
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('Saved the change; in effect now.').waitFor();
  assert.equal(await daemon.cli('settings', 'get', 'reminders.ladder'), '10s,20s,30s');
  assert.equal(await daemon.cli('settings', 'get', 'reminders.paused'), 'true');
  assert.equal(await daemon.cli('settings', 'get', 'tasks.keep_ended'), '3d');
  assert.equal(await page.evaluate(() => window.__sameDocument), true);
  noProblems();
});

test("an invalid setting shows its error next to the field, from the UI's check and from the API", async () => {
  await openUi('#/settings');
  const stall = page.getByLabel('Stalled after');
  await stall.waitFor();
  const puts = [];
  page.on('request', (r) => r.method() === 'PUT' && puts.push(r.url()));

  // A typo is caught before any request.
  await stall.fill('soon');
  const field = page.locator('[data-setting="reminders.stall_after"]');
  await field.locator('.field-error').waitFor();
  assert.match(await field.locator('.field-error').innerText(), /duration such as 90s/);
  await page.getByRole('button', { name: 'Save' }).click();
  assert.deepEqual(puts, []);
  assert.equal(await stall.evaluate((el) => el === document.activeElement), true, 'focus goes to the bad field');

  // A value only the daemon can refuse (too long to count in seconds): its message, by the field.
  await stall.fill('99999999999999999999d');
  assert.equal(await field.locator('.field-error').count(), 0);
  await page.getByRole('button', { name: 'Save' }).click();
  await field.locator('.field-error').waitFor();
  assert.match(await field.locator('.field-error').innerText(), /invalid value .* for reminders\.stall_after/);
  assert.equal(puts.length, 1);
  assert.equal(await stall.getAttribute('aria-invalid'), 'true');
  await shot('settings-error');
  assert.equal(await daemon.cli('settings', 'get', 'reminders.stall_after'), '30m', 'nothing was saved');
  // The browser logs the refused PUT as a failed resource load.
  noProblems([/status of 400/]);
});

test('a wrong or missing token gets a clear message, and nothing loads', async () => {
  await page.goto(`${daemon.base}/ui/#token=${'0'.repeat(64)}`);
  const alert = page.getByRole('alert').first();
  await alert.waitFor();
  assert.match(await alert.innerText(), /refused this page's owner token/);
  assert.match(await alert.innerText(), /taskkeeper open/);
  await page.locator('[data-live="failed"]').waitFor();
  await shot('wrong-token');

  const fresh = await browser.newPage();
  try {
    await fresh.goto(`${daemon.base}/ui/`);
    await fresh.getByText(/This page has no owner token/).first().waitFor();
  } finally {
    await fresh.close();
  }
  noProblems([/status of 401/]);
});

test('an address from `taskkeeper open` signs in once; opened again it says to run `taskkeeper open` again', async () => {
  await daemon.desk('web');
  const planner = await daemon.asker('planner');
  await daemon.send('web', 'Add a --json flag', planner);
  const url = await openAddress();
  const exchanges = [];
  const onRequest = (r) => r.url().endsWith('/ui/session') && exchanges.push(r.method());
  browser.on('request', onRequest);

  await page.goto(url);
  await page.locator('[data-live="live"]').waitFor();
  await row('Add a --json flag').waitFor();
  assert.equal(page.url(), `${daemon.base}/ui/`);

  // The same address again (a second tab, history, someone who read it off the browser's
  // command line): the code is spent, so the page gets no token and says what to do.
  const again = await browser.newPage();
  try {
    await again.goto(url);
    const alert = again.getByRole('alert').first();
    await alert.waitFor();
    assert.match(await alert.innerText(), /expired or was already used/);
    assert.match(await alert.innerText(), /Run taskkeeper open again/);
    await again.locator('[data-live="failed"]').waitFor();
    assert.equal(again.url(), `${daemon.base}/ui/`, 'the spent code left the address bar too');
    assert.equal(await again.locator('[data-task-id]').count(), 0, 'nothing loads');
    await again.screenshot({ path: join(ARTIFACTS, 'code-used.png') });
  } finally {
    await again.close();
    browser.off('request', onRequest);
  }
  assert.deepEqual(exchanges, ['POST', 'POST'], 'one exchange per page load');

  // The first tab is unaffected and a fresh address signs a new tab in.
  await row('Add a --json flag').waitFor();
  const fresh = await browser.newPage();
  try {
    await fresh.goto(await openAddress());
    await fresh.locator('[data-task-id]', { hasText: 'Add a --json flag' }).waitFor();
  } finally {
    await fresh.close();
  }
  noProblems();
});

test('`taskkeeper open` hands the browser only the path of a private sign-in page, which signs in once and is gone', async () => {
  await daemon.desk('web');
  const planner = await daemon.asker('planner');
  await daemon.send('web', 'Add a --json flag', planner);
  // A stand-in opener on the PATH: what it is given is what a browser's command line shows.
  const bin = join(daemon.dir, 'bin');
  await mkdir(bin);
  const argsFile = join(daemon.dir, 'opener-args');
  await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$@" > '${argsFile}'\n`);
  await chmod(join(bin, 'xdg-open'), 0o755);
  await run(BIN, ['open'], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, TASKKEEPER_URL: daemon.base, TASKKEEPER_TOKEN: TOKEN },
  });
  const pagePath = await readFile(argsFile, 'utf8');
  assert.ok(!pagePath.includes('code') && !pagePath.includes(TOKEN), pagePath);
  assert.match(pagePath, /\/sign-in\/open-[0-9a-f]+\.html$/);

  // The browser opens the file; it sends the browser on to the UI, which signs in.
  await page.goto(pathToFileURL(pagePath).href);
  await page.locator('[data-live="live"]').waitFor();
  await row('Add a --json flag').waitFor();
  assert.equal(page.url(), `${daemon.base}/ui/`, 'the code left the address bar');
  assert.ok(!existsSync(pagePath), 'the sign-in page is gone once its code is used');
  noProblems();
});

test("desks and sessions show each session's state, and reminders pause per session and for all", async () => {
  const dir = await daemon.desk('web');
  await daemon.hook('s-1', 'SessionStart', dir, { source: 'startup' });
  await daemon.hook('s-1', 'UserPromptSubmit', dir, { prompt: 'build it' });
  await daemon.hook('s-1', 'PreToolUse', dir, {
    tool_name: 'Bash',
    tool_input: { command: 'npm run watch', run_in_background: true },
  });
  await daemon.hook('s-1', 'PostToolUse', dir, { tool_name: 'Bash', tool_response: { stdout: '', backgroundTaskId: 'bg-1' } });
  await daemon.hook('s-1', 'Stop', dir, {
    stop_hook_active: false,
    last_assistant_message: 'Watching the build.',
    background_tasks: [{ id: 'bg-1', type: 'shell', status: 'running', command: 'npm run watch' }],
  });

  await openUi('#/desks');
  const session = page.locator('[data-session-id="s-1"]');
  await session.waitFor();
  const text = await session.innerText();
  assert.match(text, /idle/);
  assert.match(text, /Watching the build\./);
  assert.match(text, /1 background command/);
  assert.match(await page.locator('[data-connect="claude-code"]').innerText(), /1 Claude Code session running/);

  await session.getByRole('button', { name: 'Pause reminders' }).click();
  await session.getByText("This session's reminders are paused.").waitFor();

  await page.getByRole('button', { name: 'Pause all' }).click();
  await page.getByText('All reminders are paused.', { exact: true }).waitFor();
  assert.equal(await daemon.cli('settings', 'get', 'reminders.paused'), 'true');
  await shot('desks');
  // Every other view says so too, with the way back.
  await page.getByRole('link', { name: 'Open' }).click();
  await page.locator('.paused-bar').waitFor();
  await page.locator('.paused-bar').getByRole('link', { name: 'Resume' }).click();
  await page.getByRole('button', { name: 'Resume all' }).click();
  await page.getByText('Reminders are on for every session.').waitFor();
  assert.equal(await daemon.cli('settings', 'get', 'reminders.paused'), 'false');
  noProblems();
});

test('`taskkeeper open` checks that the daemon serves the UI and that the token works', async () => {
  // A wrong token is caught in the terminal, before a browser shows an error page.
  await assert.rejects(daemon.cliAs('f'.repeat(64), 'open', '--print'), /owner token was refused/);
  const plain = await Daemon.start({ ui: false });
  try {
    await assert.rejects(plain.cli('open', '--print'), /does not serve the web UI; restart it with `taskkeeper serve --ui`/);
    const res = await fetch(`${plain.base}/ui/`);
    assert.equal(res.status, 404);
  } finally {
    await plain.stop();
  }
});

test('a stall reaches the window as a notice; Resume and Remind now act from the task', async () => {
  const dir = await daemon.desk('web');
  await daemon.api('PUT', '/api/settings', {
    'reminders.first_after.claude-code': '1s',
    'reminders.ladder': '1s',
    'reminders.stall_after': '1s',
  });
  const planner = await daemon.asker('planner');
  await openUi();
  await page.getByRole('heading', { name: 'No open tasks.' }).waitFor();

  // A Claude Code session takes the task at its Stop, then keeps stopping without ending it.
  await daemon.hook('s-1', 'SessionStart', dir, { source: 'startup' });
  await daemon.hook('s-1', 'UserPromptSubmit', dir, { prompt: 'hello' });
  const task = await daemon.send('web', 'Fix the flaky login test', planner);
  await daemon.hook('s-1', 'Stop', dir, { last_assistant_message: 'Hi', background_tasks: [] });
  await daemon.hook('s-1', 'Stop', dir, { last_assistant_message: 'Now reading the logs…', background_tasks: [] });
  for (const expected of ['Reminder #1', 'Reminder #2']) {
    const reminder = await daemon.wait('s-1', dir);
    assert.match(reminder.text, new RegExp(expected));
    await daemon.hook('s-1', 'UserPromptSubmit', dir, { prompt: '<task-notification>…</task-notification>' });
    await daemon.hook('s-1', 'Stop', dir, { last_assistant_message: 'Still on it', background_tasks: [] });
  }
  assert.match((await daemon.wait('s-1', dir)).text, /marked stalled/);

  // The owner hears of it without reloading: a notice, the row's badge, the header's count.
  const notice = page.locator('.notice-stalled');
  await notice.waitFor();
  assert.match(await notice.innerText(), /Stalled at web: Fix the flaky login test/);
  await page.waitForFunction(() => /1 stalled/.test(document.querySelector('.summary')?.textContent ?? ''));
  const stalledRow = row('Fix the flaky login test');
  await stalledRow.locator('.badge-stalled').waitFor();
  // One badge, the daemon's label: what `taskkeeper task list` prints for it.
  assert.equal(await stalledRow.locator('.badge').innerText(), 'stalled');
  assert.match(await daemon.cli('task', 'list'), / stalled /);
  assert.match(await stalledRow.innerText(), /2 reminders sent, the last/);
  assert.match(await stalledRow.innerText(), /Still on it/);
  await shot('stalled');

  await notice.getByRole('link').click();
  await page.locator('.callout.is-stalled').waitFor();
  await shot('detail-stalled', { full: true });
  await page.getByRole('button', { name: 'Resume reminders' }).click();
  await page.getByText('Reminders start again.').waitFor();
  await page.locator('.callout.is-stalled').waitFor({ state: 'detached' });
  await notice.waitFor({ state: 'detached' });
  const resumed = await daemon.api('GET', `/api/tasks/${task.id}`);
  assert.equal(resumed.stalledAt, null);
  assert.equal(resumed.remindersSent, 0);

  // Remind now: the session gets a reminder outside the ladder, through its waiter.
  await daemon.api('PUT', '/api/settings', { 'reminders.paused': 'true' });
  await page.getByRole('button', { name: 'Remind now' }).click();
  await page.getByText('Reminder sent to the session.').waitFor();
  assert.match((await daemon.wait('s-1', dir)).text, /Fix the flaky login test/);
  noProblems();
});

/** This test's daemon instead of the usual one: started with `env` (e.g. its `claude`). */
async function restartDaemonWith(env) {
  await daemon.stop();
  daemon = await Daemon.start({ env });
}

const deskCard = (name) => page.locator(`section[aria-label="desk ${name}"]`);

test("a desk's delivery command is set, kept and cleared from the Desks view; a multi-line one is refused", async () => {
  await daemon.desk('web');
  await daemon.desk('notes', 'generic');
  const patches = [];
  page.on('request', (r) => r.method() === 'PATCH' && patches.push(r.url()));
  await openUi('#/desks');
  const web = deskCard('web');
  const line = web.locator('.deliver-line');
  await line.waitFor();
  assert.match(await line.innerText(), /Delivery command:\s*none/);
  // Launching is for claude-code desks only.
  assert.equal(await web.getByRole('button', { name: 'Launch headless session' }).count(), 1);
  assert.equal(await deskCard('notes').getByRole('button', { name: 'Launch headless session' }).count(), 0);

  // Set: the field takes focus, Enter saves.
  const command = 'tmux send-keys -t work:1 -l "$(cat)" Enter';
  await web.getByRole('button', { name: 'Set…' }).click();
  const field = web.getByLabel('Delivery command for web');
  await page.waitForFunction(() => document.activeElement?.id === 'deliver-web');
  await field.fill(command);
  await shot('desk-deliver-edit');
  await page.keyboard.press('Enter');
  await web.getByText('Delivery command saved.').waitFor();
  assert.equal(await web.locator('.deliver-command').innerText(), command);
  assert.equal(await field.count(), 0, 'the form closed');
  const deskOf = async (name) => (await daemon.api('GET', '/api/desks')).desks.find((d) => d.name === name);
  assert.equal((await deskOf('web')).deliverCommand, command);
  assert.equal((await deskOf('notes')).deliverCommand, null);
  await shot('desk-deliver-set');

  // It is the daemon's: a reload shows it.
  await page.reload();
  await page.locator('[data-live="live"]').waitFor();
  await web.locator('.deliver-command').waitFor();
  assert.equal(await web.locator('.deliver-command').innerText(), command);

  // A pasted script (more than one line) is refused before any request; nothing changes.
  patches.length = 0;
  await web.getByRole('button', { name: 'Edit…' }).click();
  assert.equal(await field.inputValue(), command, 'the form starts from the current command');
  await field.fill('cd ~/work\ncat >> inbox.txt');
  const error = web.locator('.field-error');
  await error.waitFor();
  assert.match(await error.innerText(), /must be one line/);
  assert.equal(await field.getAttribute('aria-invalid'), 'true');
  await web.getByRole('button', { name: 'Save' }).click();
  assert.equal(await field.evaluate((el) => el === document.activeElement), true, 'focus stays on the field');
  await shot('desk-deliver-refused');
  assert.deepEqual(patches, []);
  assert.equal((await deskOf('web')).deliverCommand, command);
  // Escape closes the form (and nothing else).
  await page.keyboard.press('Escape');
  await field.waitFor({ state: 'detached' });
  assert.equal(await web.locator('.deliver-command').innerText(), command);

  // Clear it.
  await web.getByRole('button', { name: 'Edit…' }).click();
  await web.getByRole('button', { name: 'Remove' }).click();
  await web.getByText('This desk has no delivery command now.').waitFor();
  // The line shows the desk as the daemon has it, after the re-read that follows the change.
  await web.locator('.deliver-line .note', { hasText: 'none' }).waitFor();
  assert.match(await line.innerText(), /Delivery command:\s*none/);
  assert.equal((await deskOf('web')).deliverCommand, null);
  assert.equal(patches.length, 1);
  noProblems();
});

test("Launch on a claude-code desk shows why `claude` cannot start", async () => {
  await restartDaemonWith({ TASKKEEPER_CLAUDE: '/nonexistent/claude' });
  await daemon.desk('web');
  await openUi('#/desks');
  const web = deskCard('web');
  await web.getByRole('button', { name: 'Launch headless session' }).click();
  const alert = web.getByRole('alert');
  await alert.waitFor();
  const text = await alert.innerText();
  assert.match(text, /TASKKEEPER_CLAUDE/);
  assert.match(text, /\/nonexistent\/claude/);
  await shot('desk-launch-refused');
  assert.deepEqual((await daemon.api('GET', '/api/sessions')).sessions, [], 'nothing was launched');
  assert.equal(await web.getByRole('button', { name: 'Launch headless session' }).isEnabled(), true, 'it can be tried again');
  // The browser logs the refused POST as a failed resource load.
  noProblems([/status of 500/]);
});

test('a codex desk and a gemini desk launch their own agents headless, and each kind has its Connect hint', async () => {
  await restartDaemonWith({ TASKKEEPER_CODEX: '/nonexistent/codex', TASKKEEPER_GEMINI: '/nonexistent/gemini' });
  await daemon.desk('cx', 'codex');
  await daemon.desk('gm', 'gemini');
  await daemon.desk('notes', 'generic');
  await openUi('#/desks');
  for (const [name, program, variable] of [
    ['cx', '/nonexistent/codex', 'TASKKEEPER_CODEX'],
    ['gm', '/nonexistent/gemini', 'TASKKEEPER_GEMINI'],
  ]) {
    const card = deskCard(name);
    await card.getByRole('button', { name: 'Launch headless session' }).click();
    const alert = card.getByRole('alert');
    await alert.waitFor();
    const text = await alert.innerText();
    assert.match(text, new RegExp(variable));
    assert.ok(text.includes(program), text);
  }
  assert.equal(await deskCard('notes').getByRole('button', { name: 'Launch headless session' }).count(), 0, 'a generic desk has no launch');
  const hints = await page.locator('.connect').allInnerTexts();
  assert.match(hints.join('\n'), /taskkeeper connect claude-code/);
  assert.match(hints.join('\n'), /taskkeeper connect codex/);
  assert.match(hints.join('\n'), /taskkeeper connect gemini/);
  await shot('desk-launch-kinds');
  assert.deepEqual((await daemon.api('GET', '/api/sessions')).sessions, [], 'nothing was launched');
  noProblems([/status of 500/]);
});

test('a headless session is marked as such and stopped from its row', async () => {
  // Not Claude Code (the Rust tests launch the real one): a stand-in that reads its stdin
  // until Taskkeeper closes it, which is all the UI needs to see.
  const bin = await mkdtemp(join(tmpdir(), 'tk-fake-claude-'));
  const fake = join(bin, 'claude');
  await writeFile(fake, '#!/bin/sh\nexec cat >/dev/null\n');
  await chmod(fake, 0o755);
  try {
    await restartDaemonWith({ TASKKEEPER_CLAUDE: fake });
    const dir = await daemon.desk('web');
    // A session started in a terminal, for comparison: no headless mark, no Stop.
    await daemon.hook('s-term', 'SessionStart', dir, { source: 'startup' });
    await openUi('#/desks');
    const web = deskCard('web');
    await page.locator('[data-session-id="s-term"]').waitFor();
    await web.getByRole('button', { name: 'Launch headless session' }).click();
    await web.getByText('Launched a headless session; it appears below.').waitFor();
    const launched = (await daemon.api('GET', '/api/sessions')).sessions.find((s) => s.headless);
    assert.ok(launched, 'the daemon lists a headless session');
    const row = page.locator(`[data-session-id="${launched.id}"]`);
    await row.waitFor();
    assert.match(await row.locator('.meta').innerText(), /headless/);
    const terminal = page.locator('[data-session-id="s-term"]');
    assert.doesNotMatch(await terminal.locator('.meta').innerText(), /headless/);
    assert.equal(await terminal.getByRole('button', { name: 'Stop' }).count(), 0);
    await shot('desk-headless');

    await row.getByRole('button', { name: 'Stop' }).click();
    // It ends, and moves to the desk's ended sessions, where nothing can be stopped.
    await web.locator('.ended-sessions summary', { hasText: '1 ended session' }).waitFor({ timeout: 15_000 });
    const ended = (await daemon.api('GET', '/api/sessions')).sessions.find((s) => s.id === launched.id);
    assert.equal(ended.activity, 'ended');
    await web.locator('.ended-sessions summary').click();
    assert.equal(await row.getByRole('button', { name: 'Stop' }).count(), 0);
    assert.match(await row.locator('.meta').innerText(), /ended/);
    noProblems();
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
});

/**
 * A stand-in for `claude -p --permission-prompt-tool stdio` (not Claude Code: the Rust tests
 * launch the real one): it asks for `ask` on stdout the way Claude Code does, then keeps what
 * Taskkeeper writes to its stdin in `answers`. `read()` waits for the control responses there.
 * It asks half a second after it starts, so the page has read the new session (after the
 * launch) before there is a request to show: only the live feed's session hint brings it.
 */
async function fakeAsker(ask) {
  const bin = await mkdtemp(join(tmpdir(), 'tk-fake-claude-'));
  const fake = join(bin, 'claude');
  const answers = join(bin, 'answers');
  const state = { type: 'system', subtype: 'session_state_changed', state: 'requires_action' };
  await writeFile(
    fake,
    // printf, not echo: dash's echo would turn the JSON's `\n` escapes into line breaks.
    ['#!/bin/sh', 'sleep 0.5', `printf '%s\\n' '${JSON.stringify(state)}' '${JSON.stringify(ask)}'`, `exec cat > '${answers}'`, ''].join('\n'),
  );
  await chmod(fake, 0o755);
  const read = async () => {
    for (let i = 0; i < 100; i++) {
      const text = existsSync(answers) ? await readFile(answers, 'utf8') : '';
      const responses = text
        .split('\n')
        .filter((line) => line.includes('"type":"control_response"'))
        .map((line) => JSON.parse(line));
      if (responses.length > 0) return responses;
      await new Promise((r) => setTimeout(r, 100));
    }
    return [];
  };
  return { fake, read, remove: () => rm(bin, { recursive: true, force: true }) };
}

/**
 * Launches a headless session at desk web from the page; answers its request's section. The
 * request shows within 2 s of the launch: the feed's `sessions` hint brings it, not the desks
 * view's poll (30 s while the feed is up).
 */
async function launchAndSeeRequest(requestId) {
  await daemon.desk('web');
  await openUi('#/desks');
  const web = deskCard('web');
  await web.getByRole('button', { name: 'Launch headless session' }).click();
  const request = web.locator(`[data-permission-request="${requestId}"]`);
  await request.waitFor({ timeout: 2_000 });
  const session = (await daemon.api('GET', '/api/sessions')).sessions.find((s) => s.headless);
  return { request, row: page.locator(`[data-session-id="${session.id}"]`), session };
}

test('a headless session asks to use a tool: a notice leads to the Desks view, where Allow answers it on its stdin', async () => {
  const asker = await fakeAsker({
    type: 'control_request',
    request_id: 'r-1',
    request: { subtype: 'can_use_tool', tool_name: 'Bash', input: { command: 'touch x' }, description: 'touch x' },
  });
  try {
    await restartDaemonWith({ TASKKEEPER_CLAUDE: asker.fake });
    // Launched elsewhere (the API) while the page shows the open tasks: the notice tells.
    await daemon.desk('web');
    await openUi();
    const { id } = await daemon.api('POST', '/api/desks/web/launch');
    const notice = page.locator('.notice-permission-asked');
    await notice.waitFor({ timeout: 5_000 });
    assert.match(await notice.innerText(), /Asks you at web: a session wants to use Bash: touch x\./);
    await shot('notice-permission');
    // Following it leads to the Desks view, where the request waits with Allow and Deny.
    await notice.getByRole('link', { name: 'Answer in Desks' }).click();
    await page.waitForFunction(() => window.location.hash === '#/desks');
    const request = deskCard('web').locator('[data-permission-request="r-1"]');
    await request.waitFor();
    await request.getByRole('button', { name: 'Allow' }).waitFor();
    await request.getByRole('button', { name: 'Deny', exact: true }).waitFor();
    const session = (await daemon.api('GET', '/api/sessions')).sessions.find((s) => s.id === id);
    const row = page.locator(`[data-session-id="${id}"]`);
    assert.match(await row.locator('.meta').innerText(), /waiting on you/);
    assert.match(await request.innerText(), /wants to use Bash: touch x/);
    assert.equal(await request.locator('pre.permission-input').innerText(), '{"command":"touch x"}');
    assert.deepEqual(session.permission, { requestId: 'r-1', tool: 'Bash', description: 'touch x', input: '{"command":"touch x"}' });
    await shot('desk-permission');

    // By keyboard: Allow takes focus, Enter presses it.
    await request.getByRole('button', { name: 'Allow' }).focus();
    await page.keyboard.press('Enter');
    await row.getByText('Allowed; the session goes on.').waitFor();
    await request.waitFor({ state: 'detached' });
    assert.equal((await daemon.api('GET', '/api/sessions')).sessions.find((s) => s.id === session.id).permission, null);
    // Answered: the notice goes, it would only mislead.
    await notice.waitFor({ state: 'detached', timeout: 5_000 });

    // What the session read on its stdin: one answer, allowing r-1.
    const responses = await asker.read();
    assert.equal(responses.length, 1, JSON.stringify(responses));
    assert.equal(responses[0].type, 'control_response');
    assert.equal(responses[0].response.request_id, 'r-1');
    assert.equal(responses[0].response.response.behavior, 'allow');

    // Nothing waits any more: a second answer is refused.
    await daemon.api('POST', `/api/sessions/${encodeURIComponent(session.id)}/permission`, { allow: true }, { expect: [409] });
    noProblems();
  } finally {
    await asker.remove();
  }
});

test('Deny with a message answers the request; a long input starts folded', async () => {
  const content = 'line of the file\n'.repeat(40);
  const asker = await fakeAsker({
    type: 'control_request',
    request_id: 'r-2',
    request: { subtype: 'can_use_tool', tool_name: 'Write', input: { file_path: '/etc/motd', content } },
  });
  try {
    await restartDaemonWith({ TASKKEEPER_CLAUDE: asker.fake });
    const { request, row } = await launchAndSeeRequest('r-2');
    assert.match(await request.locator('.permission-ask').innerText(), /wants to use Write$/);
    const folded = request.locator('details.permission-more');
    assert.equal(await folded.getAttribute('open'), null, 'the long input starts folded');
    assert.equal(await request.locator('pre.permission-input').isVisible(), false);
    await folded.locator('summary').click();
    assert.match(await request.locator('pre.permission-input').innerText(), /\/etc\/motd/);

    // The message form: its field takes focus, Escape closes it and focus goes back.
    const withMessage = request.getByRole('button', { name: 'Deny with a message…' });
    await withMessage.click();
    const field = request.getByLabel('Why not (optional; the session reads it)');
    await page.waitForFunction(() => document.activeElement?.tagName === 'INPUT');
    await page.keyboard.press('Escape');
    await field.waitFor({ state: 'detached' });
    // Focus goes back once the view has settled after the form closed: wait for it (the
    // bound is the test's), rather than reading it in the same instant.
    const button = await withMessage.elementHandle();
    await page.waitForFunction((el) => el === document.activeElement, button, { timeout: 5000 });

    await withMessage.click();
    await field.fill('Not /etc; write it in the repository.');
    await shot('desk-permission-deny');
    await page.keyboard.press('Enter');
    await row.getByText('Denied; the session was told.').waitFor();
    await request.waitFor({ state: 'detached' });

    const responses = await asker.read();
    assert.equal(responses.length, 1, JSON.stringify(responses));
    assert.equal(responses[0].response.request_id, 'r-2');
    assert.equal(responses[0].response.response.behavior, 'deny');
    assert.equal(responses[0].response.response.message, 'Not /etc; write it in the repository.');
    noProblems();
  } finally {
    await asker.remove();
  }
});

/**
 * A throwaway HOME with Claude Code's settings in it, and `taskkeeper` "installed" outside
 * the build directory (a hard link, else a copy) on a PATH of its own.
 */
async function machine() {
  const root = await mkdtemp(join(tmpdir(), 'tk-agents-'));
  const home = join(root, 'home');
  await mkdir(join(home, '.claude'), { recursive: true });
  const settings = join(home, '.claude', 'settings.json');
  const original = '{\n  "model": "opus"\n}\n';
  await writeFile(settings, original);
  await mkdir(join(root, 'bin'));
  const installed = join(root, 'bin', 'taskkeeper');
  await link(BIN, installed).catch(() => copyFile(BIN, installed));
  const env = { HOME: home, PATH: `${join(root, 'bin')}:${process.env.PATH}` };
  return { root, home, settings, original, installed, env };
}

test('Connect and Disconnect in the settings panel change Claude Code\'s settings as `taskkeeper connect` does', async () => {
  const m = await machine();
  await daemon.stop();
  daemon = await Daemon.start({ bin: m.installed, env: m.env });
  try {
    await openUi('#/settings');
    const agent = page.locator('[data-agent="claude-code"]');
    await agent.getByText('Not connected').waitFor();
    await agent.getByRole('button', { name: 'Connect' }).click();
    const status = agent.getByRole('status');
    await status.getByText('Connected. Changed:').waitFor();
    assert.match(await status.textContent(), /settings\.json: added Taskkeeper's hooks/);
    assert.match(await status.textContent(), /\.claude\.json: added the MCP server `taskkeeper`/);
    await agent.getByText('Connected', { exact: true }).waitFor();
    await shot('settings-agents-connected');

    const settings = JSON.parse(await readFile(m.settings, 'utf8'));
    assert.equal(settings.model, 'opus', "the user's settings stay");
    assert.equal(settings.hooks.Stop[0].hooks[0].command, 'taskkeeper', 'the PATH finds the installed binary, so its name');
    const config = JSON.parse(await readFile(join(m.home, '.claude.json'), 'utf8'));
    assert.equal(config.mcpServers.taskkeeper.url, `${daemon.base}/mcp`);
    // What the window wrote, the CLI finds working.
    const { stdout } = await run(m.installed, ['connect', 'claude-code', '--check'], {
      env: { ...process.env, ...m.env, TASKKEEPER_URL: daemon.base },
    });
    assert.match(stdout, /Claude Code is connected to a working Taskkeeper/);

    // The undo puts back exactly what was there.
    await status.getByRole('button', { name: 'Undo' }).click();
    await agent.getByRole('status').getByText('Disconnected. Changed:').waitFor();
    assert.equal(await readFile(m.settings, 'utf8'), m.original);
    assert.ok(!existsSync(join(m.home, '.claude.json')), 'the file connect created is gone');
    await agent.getByText('Not connected').waitFor();

    // Connect again, then Disconnect from the row.
    await agent.getByRole('button', { name: 'Connect' }).click();
    await agent.getByRole('button', { name: 'Disconnect' }).click();
    await agent.getByRole('status').getByText('Disconnected. Changed:').waitFor();
    assert.equal(await readFile(m.settings, 'utf8'), m.original);
    noProblems();
  } finally {
    await rm(m.root, { recursive: true, force: true });
  }
});

test('Connect from a daemon in the build directory is refused with the reason, and Connect anyway connects', async () => {
  const m = await machine();
  await daemon.stop();
  daemon = await Daemon.start({ env: m.env });
  try {
    await openUi('#/settings');
    const agent = page.locator('[data-agent="claude-code"]');
    await agent.getByRole('button', { name: 'Connect' }).click();
    await agent.getByRole('alert').getByText(/inside a Cargo build directory/).waitFor();
    assert.equal(await readFile(m.settings, 'utf8'), m.original, 'nothing was changed');
    await shot('settings-agents-refused');
    await agent.getByRole('button', { name: 'Connect anyway' }).click();
    await agent.getByRole('status').getByText('Connected. Changed:').waitFor();
    const settings = JSON.parse(await readFile(m.settings, 'utf8'));
    assert.equal(settings.hooks.Stop[0].hooks[0].command, BIN);
    noProblems([/409/]);
  } finally {
    await rm(m.root, { recursive: true, force: true });
  }
});

/**
 * A session takes the task and keeps stopping without ending it: two reminders go, each
 * starting a turn of its own; the next reminder and the stall are still to come. Ladder:
 * the first after 2 s, then 2 s, then 30 s, the stall 60 s after that.
 */
async function twoRemindersIn(dir, planner) {
  await daemon.api('PUT', '/api/settings', {
    'reminders.first_after.claude-code': '2s',
    'reminders.ladder': '2s,30s',
    'reminders.stall_after': '60s',
  });
  await daemon.hook('s-1', 'SessionStart', dir, { source: 'startup' });
  await daemon.hook('s-1', 'UserPromptSubmit', dir, { prompt: 'hello' });
  const task = await daemon.send('web', 'Fix the flaky login test', planner);
  await daemon.hook('s-1', 'Stop', dir, { last_assistant_message: 'Hi', background_tasks: [] });
  await daemon.hook('s-1', 'Stop', dir, { last_assistant_message: 'Now reading the logs…', background_tasks: [] });
  for (const expected of ['Reminder #1', 'Reminder #2']) {
    const reminder = await daemon.wait('s-1', dir);
    assert.match(reminder.text, new RegExp(expected));
    await daemon.hook('s-1', 'UserPromptSubmit', dir, { prompt: '<task-notification>…</task-notification>' });
    await new Promise((r) => setTimeout(r, 700));
    await daemon.hook('s-1', 'Stop', dir, { last_assistant_message: 'Still reading the logs', background_tasks: [] });
  }
  return task;
}

test("the ladder as a picture: the task's timeline in its detail and a small one in the open list, light and dark", async () => {
  const dir = await daemon.desk('web');
  const planner = await daemon.asker('planner');
  const task = await twoRemindersIn(dir, planner);
  const fromApi = (await daemon.api('GET', `/api/tasks/${task.id}`)).timeline;
  assert.equal(fromApi.reminders.length, 2);
  assert.deepEqual(
    fromApi.due.map((d) => d.kind),
    ['remind', 'stall'],
  );

  await openUi();
  const small = row('Fix the flaky login test').locator('svg.timeline.is-compact');
  await small.waitFor();
  // The picture draws exactly the daemon's timeline: two sent, one due, the stall to come.
  assert.equal(await small.locator('[data-mark="reminder"]').count(), 2);
  assert.equal(await small.locator('[data-mark="next"]').count(), 1);
  assert.equal(await small.locator('[data-mark="stall"]').count(), 1);
  assert.ok((await small.locator('[data-turn]').count()) >= 3, 'the turns in between');
  assert.match(await small.getAttribute('aria-label'), /2 reminders sent · next reminder .* · stalls .* if it stays quiet/);
  await shot('timeline-open-list');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot('timeline-open-list-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await row('Fix the flaky login test').locator('a').click();
  const section = page.locator('section[aria-label="timeline"]');
  await section.waitFor();
  const steps = await section.locator('.tl-step-label').allInnerTexts();
  assert.deepEqual(steps.slice(0, 2), ['Handed to the session', 'Went quiet']);
  assert.ok(steps.includes('Reminder 1') && steps.includes('Reminder 2'), steps.join(' | '));
  assert.ok(steps.includes('Reminder due 3') && steps.includes('Stalls if still quiet'), steps.join(' | '));
  assert.match(steps.at(-1), /turns of the session since it took the task/);
  // Each step's time is the daemon's.
  const times = await section.locator('.tl-step time').evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')));
  assert.ok(times.includes(fromApi.reminders[0]) && times.includes(fromApi.due.at(-1).at), times.join(' '));
  // The SVG's marks are in time order along the line.
  const xs = await section
    .locator('svg [data-mark="reminder"] circle, svg [data-mark="next"] circle')
    .evaluateAll((cs) => cs.map((c) => Number(c.getAttribute('cx'))));
  assert.deepEqual(xs, [...xs].sort((a, b) => a - b));
  await section.scrollIntoViewIfNeeded();
  await shot('timeline-detail');
  // The README's picture of the window: the task with its timeline, in the tray window's size.
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot('readme-window');
  await page.emulateMedia({ colorScheme: 'dark' });
  await section.scrollIntoViewIfNeeded();
  await shot('timeline-detail-dark');
  const axis = await section.locator('.tl-axis').first().evaluate((l) => getComputedStyle(l).stroke);
  assert.equal(axis, 'rgb(160, 164, 169)', 'the dark palette draws the line');
  await page.emulateMedia({ colorScheme: 'light' });
  noProblems();
});

test('the digest view shows what happened since the last digest; Done takes it', async () => {
  await daemon.desk('web');
  const planner = await daemon.asker('planner');
  const asked = await daemon.send('web', 'Add a --json flag', planner);
  await daemon.api('POST', `/api/tasks/${asked.id}/update`, { status: 'done', text: 'Added --json.' });
  const own = await daemon.api('POST', '/api/tasks', { desk: 'web', text: 'Tidy the changelog' });
  await daemon.api('POST', `/api/tasks/${own.id}/update`, { status: 'done', text: 'Tidied.' });

  await openUi('#/digest');
  const since = page.locator('.digest-since');
  await since.waitFor();
  assert.equal(await since.innerText(), 'Since the beginning: 2 finished, 1 not acknowledged.');
  const finished = page.locator('[data-digest-part="finished"]');
  assert.equal(await finished.locator('[data-task-id]').count(), 2);
  const ack = page.locator('[data-digest-part="ack"]');
  assert.match(await ack.innerText(), /Add a --json flag/);
  assert.doesNotMatch(await ack.innerText(), /Tidy the changelog/, "the owner's own task needs no acknowledgement");
  await shot('digest', { full: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot('digest-dark', { full: true });
  await page.emulateMedia({ colorScheme: 'light' });
  // Opening it took nothing: the CLI's peek still sees both.
  assert.match(await daemon.cli('digest', '--peek'), /Finished: 2/);

  await page.getByRole('button', { name: 'Done: start the next digest from now' }).click();
  await page.getByText('Done: the next digest starts from now.').waitFor();
  await page.waitForFunction(() => /^Since .*: 1 not acknowledged\.$/.test(document.querySelector('.digest-since')?.textContent ?? ''));
  const after = await daemon.api('GET', '/api/digest');
  assert.notEqual(after.since, null);
  assert.deepEqual(after.counts, { stalled: 0, finished: 0, waitingOnOwner: 0, ackPending: 1, reminders: 0 });
  noProblems();
});

test('a desk with work and no session says so; set to launch by itself, it gets a headless session', async () => {
  const bin = await mkdtemp(join(tmpdir(), 'tk-fake-claude-'));
  const fake = join(bin, 'claude');
  await writeFile(fake, '#!/bin/sh\nexec cat >/dev/null\n');
  await chmod(fake, 0o755);
  try {
    await restartDaemonWith({ TASKKEEPER_CLAUDE: fake });
    await daemon.desk('web');
    await daemon.desk('api');
    const planner = await daemon.asker('planner');
    await daemon.send('web', 'Fix the flaky login test', planner);
    await openUi('#/desks');
    const waits = page.locator('[data-needs-session="web"]');
    await waits.waitFor();
    assert.match(await waits.innerText(), /Work waits, no session\. This desk has 1 open task and no live session/);
    assert.equal(await page.locator('[data-needs-session="api"]').count(), 0, 'a desk without work needs nothing');
    assert.match(await daemon.cli('desk', 'list'), /web .*NO SESSION: work waits \(`taskkeeper session launch web`\)/);
    await shot('desk-needs-session');
    await page.emulateMedia({ colorScheme: 'dark' });
    await shot('desk-needs-session-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    const toggle = page.locator('[data-auto-launch="web"]');
    assert.equal(await toggle.isChecked(), false, 'off by default');
    // The box shows the desk as the daemon has it: checked once the change is read back.
    await toggle.click();
    await deskCard('web').getByText('This desk now launches a headless session by itself').waitFor();
    await page.waitForFunction(() => document.querySelector('[data-auto-launch="web"]')?.checked === true);
    // The daemon launched one by itself: the desk's state clears, a headless session shows.
    await waits.waitFor({ state: 'detached', timeout: 15_000 });
    await deskCard('web').locator('.badge-headless').waitFor();
    const sessions = (await daemon.api('GET', '/api/sessions')).sessions;
    assert.equal(sessions.filter((s) => s.headless && s.desk === 'web').length, 1);
    assert.match(await daemon.cli('desk', 'list'), /web .*\[launches by itself\]/);
    await shot('desk-launched-by-itself');
    noProblems();
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
});
