// Live updates: the page's data is refreshed when the change feed
// (/v1/events, Server-Sent Events with the session cookie) names a
// relevant change; when the stream cannot be held, polling takes over
// and the stream is tried again later. The header's indicator says which.

import { url } from './api.js';

const pollEvery = 15000; // polling fallback period
const retryStreamAfter = 30000; // how long polling lasts before the stream is tried again
const openWithin = 5000; // a stream not open by then: poll meanwhile

function indicate(state, byDesign = false) {
  const el = document.getElementById('live');
  if (!el) return;
  el.dataset.state = state;
  const text = { live: 'Live', polling: 'Polling', connecting: 'Connecting…', off: 'Not live' }[state];
  el.querySelector('.live-text').textContent = text;
  el.title = {
    live: 'Updates arrive from the change feed as they happen.',
    polling: byDesign ? 'This page\'s data is not in the change feed: it is refreshed every 15 seconds.'
      : 'The change feed is unavailable: the page is refreshed every 15 seconds.',
    connecting: 'Connecting to the change feed.',
    off: 'This page does not update by itself.',
  }[state];
}

// watch refreshes the page on the events spec names ({actions: [...],
// agent?, env?, board?}) and answers a function that stops it. Without
// actions (nothing in the feed describes the page's data) it polls.
export function watch(spec, refresh) {
  let stream = null;
  let pollTimer = null;
  let retryTimer = null;
  let openTimer = null;
  let pending = null;
  let stopped = false;
  // The stream carries changes from when it opens: each open refreshes, for
  // the changes between the page's load (or the stream's fall) and then.

  const soon = () => {
    if (pending || stopped) return;
    pending = setTimeout(() => { pending = null; if (!stopped) refresh(); }, 300);
  };
  const startPolling = (byDesign = false) => {
    if (!pollTimer) pollTimer = setInterval(() => { if (!document.hidden) refresh(); }, pollEvery);
    indicate('polling', byDesign);
  };
  const stopPolling = () => {
    clearInterval(pollTimer);
    pollTimer = null;
  };
  const open = () => {
    if (stopped) return;
    if (!spec.actions || !spec.actions.length || typeof EventSource === 'undefined') {
      startPolling(true);
      return;
    }
    indicate('connecting');
    const query = { actions: spec.actions.join(','), agent: spec.agent, env: spec.env, board: spec.board };
    stream = new EventSource(url('/v1/events', query));
    openTimer = setTimeout(startPolling, openWithin);
    stream.addEventListener('open', () => {
      clearTimeout(openTimer);
      stopPolling();
      indicate('live');
      soon();
    });
    for (const action of spec.actions) stream.addEventListener(action, soon);
    stream.addEventListener('progress', () => indicate('live'));
    stream.addEventListener('error', () => {
      if (stopped) return;
      if (stream.readyState === EventSource.CLOSED) {
        // refused (401, 403, 429) or gone: poll, and try the stream later.
        stream = null;
        startPolling();
        retryTimer = setTimeout(open, retryStreamAfter);
      } else {
        indicate('connecting'); // the browser reconnects by itself
        clearTimeout(openTimer);
        openTimer = setTimeout(startPolling, openWithin);
      }
    });
  };

  // A browser holds at most six connections to the server over HTTP/1.1,
  // shared by its tabs: a tab in the background lets its stream go, or the
  // seventh console tab never loads, and opens it again (which refreshes)
  // when it is shown.
  const close = () => {
    if (stream) stream.close();
    stream = null;
    stopPolling();
    clearTimeout(retryTimer);
    clearTimeout(openTimer);
  };
  const onVisibility = () => {
    if (stopped) return;
    if (document.hidden) close();
    else if (!stream && !pollTimer) open();
  };
  document.addEventListener('visibilitychange', onVisibility);

  if (!document.hidden) open();
  return () => {
    stopped = true;
    document.removeEventListener('visibilitychange', onVisibility);
    close();
    clearTimeout(pending);
    indicate('off');
  };
}

export { indicate };
