// Small hooks the views share: loading a resource and keeping it fresh without stacking
// requests, and a clock for ages.

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { asDataError, type DataError } from './data';

/** A value being loaded. After a failure the last good value stays on screen under the error. */
export type Load<T> =
  | { status: 'loading' }
  | { status: 'ready'; value: T }
  | { status: 'error'; error: DataError; value: T | null };

export function valueOf<T>(load: Load<T>): T | null {
  return load.status === 'loading' ? null : load.value;
}

export interface Resource<T> {
  load: Load<T>;
  /** Re-read now; calls made while a read runs collapse into one more read after it. */
  refresh: () => void;
  /** Re-read soon: a burst of changes (a queue moving) costs one read. */
  refreshSoon: () => void;
  /** Change the shown value in place (a live change applied before the re-read confirms it). */
  update: (change: (value: T) => T) => void;
}

const SOON_MS = 150;

/** Loads `fetcher()` now and whenever `deps` change. */
export function useResource<T>(fetcher: () => Promise<T>, deps: readonly unknown[]): Resource<T> {
  const [load, setLoad] = useState<Load<T>>({ status: 'loading' });
  const latest = useRef(fetcher);
  latest.current = fetcher;
  const state = useRef({ running: false, again: false, alive: true, generation: 0 });
  const soon = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const refresh = useCallback(() => {
    const s = state.current;
    if (s.running) {
      s.again = true;
      return;
    }
    s.running = true;
    const generation = s.generation;
    latest
      .current()
      .then(
        (value) => {
          if (s.alive && generation === s.generation) setLoad({ status: 'ready', value });
        },
        (err: unknown) => {
          if (s.alive && generation === s.generation) {
            const error = asDataError(err);
            setLoad((prev) => ({ status: 'error', error, value: valueOf(prev) }));
          }
        },
      )
      .finally(() => {
        s.running = false;
        if (s.again && s.alive) {
          s.again = false;
          refresh();
        }
      });
  }, []);

  const refreshSoon = useCallback(() => {
    clearTimeout(soon.current);
    soon.current = setTimeout(refresh, SOON_MS);
  }, [refresh]);

  const update = useCallback((change: (value: T) => T) => {
    setLoad((prev) => (prev.status === 'ready' ? { status: 'ready', value: change(prev.value) } : prev));
  }, []);

  useEffect(() => {
    const s = state.current;
    s.alive = true;
    s.generation += 1;
    s.again = false;
    s.running = false;
    setLoad({ status: 'loading' });
    refresh();
    return () => {
      s.alive = false;
      clearTimeout(soon.current);
    };
    // The caller names what the fetcher depends on; the fetcher itself is read through a ref.
  }, deps);

  return { load, refresh, refreshSoon, update };
}

/** The current time, ticking every `ms`, so ages on screen stay true without re-fetching. */
export function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** Calls `fn` every `ms` while the page is visible and `active` holds (for data with no events). */
export function useWhileVisible(fn: () => void, ms: number, active: boolean): void {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') latest.current();
    }, ms);
    return () => clearInterval(timer);
  }, [ms, active]);
}
