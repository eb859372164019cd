// Where the window is, kept in the URL's fragment (`#/recent`, `#/digest`, `#/task/ID`) so the browser's
// back and forward work, a view survives a reload, and the app can open the window on a task
// by pointing it at `index.html#/task/ID`. The token fragment (`#token=`) is taken out before
// routing starts (data.ts), so the two never meet.

export type Tab = 'open' | 'recent' | 'digest' | 'desks' | 'settings';

export type Route = { view: 'tab'; tab: Tab } | { view: 'task'; id: string };

export const TABS: readonly Tab[] = ['open', 'recent', 'digest', 'desks', 'settings'];

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '');
  const task = /^\/task\/(.+)$/.exec(path);
  if (task?.[1]) {
    try {
      return { view: 'task', id: decodeURIComponent(task[1]) };
    } catch {
      return { view: 'tab', tab: 'open' };
    }
  }
  const tab = TABS.find((t) => path === `/${t}`);
  return { view: 'tab', tab: tab ?? 'open' };
}

export function routeHref(route: Route): string {
  if (route.view === 'task') return `#/task/${encodeURIComponent(route.id)}`;
  return route.tab === 'open' ? '#/' : `#/${route.tab}`;
}
