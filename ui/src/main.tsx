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
  // after that paint, so the app hears of a frame that is on screen.
  requestAnimationFrame(() => {
    setTimeout(() => {
      data.reportFirstFrame(performance.now()).catch((err: unknown) => console.warn('ui_first_frame failed', err));
    }, 0);
  });
}
