import { describe, expect, it } from 'vitest';
import { parseRoute, routeHref } from '../src/route';

describe('routes', () => {
  it('reads tabs and tasks from the fragment, defaulting to the open list', () => {
    expect(parseRoute('')).toEqual({ view: 'tab', tab: 'open' });
    expect(parseRoute('#/')).toEqual({ view: 'tab', tab: 'open' });
    expect(parseRoute('#/recent')).toEqual({ view: 'tab', tab: 'recent' });
    expect(parseRoute('#/settings')).toEqual({ view: 'tab', tab: 'settings' });
    expect(parseRoute('#/nowhere')).toEqual({ view: 'tab', tab: 'open' });
    expect(parseRoute('#/task/abc-1')).toEqual({ view: 'task', id: 'abc-1' });
    expect(parseRoute('#/task/%E0%A4%A')).toEqual({ view: 'tab', tab: 'open' });
  });

  it('round-trips', () => {
    for (const route of [
      { view: 'tab', tab: 'open' },
      { view: 'tab', tab: 'desks' },
      { view: 'task', id: 'a/b c' },
    ] as const) {
      expect(parseRoute(routeHref(route))).toEqual(route);
    }
  });
});
