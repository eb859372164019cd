// Entry point: pick the transport once, then render. See data.ts for why there are two.

import { render } from 'preact';
import { App } from './App';
import { browserEnv, createDataSource } from './data';
import './style.css';

const root = document.getElementById('app');
if (root) {
  const data = createDataSource(browserEnv());
  render(<App data={data} />, root);
  // The first animation frame comes before the first paint; the task queued from it runs
  // after that paint, so the app hears of a frame that is on screen. A page loaded hidden
  // (the tray app makes its window ahead of an open) counts from the moment it is shown: a
  // frame drawn while hidden is no open's.
  whenVisible((shownAt) => {
    requestAnimationFrame(() => {
      setTimeout(() => {
        const hiddenMs = shownAt === null ? undefined : shownAt;
        data
          .reportFirstFrame(performance.now() - (shownAt ?? 0), hiddenMs)
          .catch((err: unknown) => console.warn('ui_first_frame failed', err));
      }, 0);
    });
  });
}

/** Calls `then` once the page is visible: at once (with null), or when it is shown (with the page's clock then). */
function whenVisible(then: (shownAt: number | null) => void): void {
  if (document.visibilityState === 'visible') {
    then(null);
    return;
  }
  const onChange = () => {
    if (document.visibilityState !== 'visible') return;
    document.removeEventListener('visibilitychange', onChange);
    then(performance.now());
  };
  document.addEventListener('visibilitychange', onChange);
}
