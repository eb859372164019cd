// Entry point: pick the transport once, then render. See data.ts for why there are two.

import { render } from 'preact';
import { App } from './App';
import { browserEnv, createDataSource } from './data';
import './style.css';

const root = document.getElementById('app');
if (root) render(<App data={createDataSource(browserEnv())} />, root);
