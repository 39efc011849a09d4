// Live pages: the queue, a node and the inbox follow the event stream (GET /app/events, the
// app's same-origin door to GET /v1/events, with the session's identity; no token in any URL)
// and redraw their `data-live` regions from a fresh copy of the page, without a reload.
// When the stream drops, a banner says so and the page reconnects, resuming after the last
// event it saw (Last-Event-ID, or `since` when it has to open a new connection).
(() => {
  const anchor = document.getElementById('live');
  const banner = document.getElementById('live-banner');
  if (!anchor || !banner || typeof EventSource === 'undefined') return;
  const root = document.documentElement;
  const filter = anchor.dataset.stream || '';
  let lastId = '';
  let source = null;
  let retryMs = 1000;
  // refusals in a row (an error answer, not a dropped connection)
  let refused = 0;
  let timer = null;
  let running = false;
  let again = false;

  const setState = (state) => {
    root.dataset.live = state;
    banner.hidden = state !== 'paused';
  };

  // A form field the person is typing in is never replaced under them, nor a form they opened
  // (a comment's edit form is a <details> they unfolded).
  const busy = (region) => {
    if (region.querySelector('details[open] form')) return true;
    const active = document.activeElement;
    return active && region.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) && active.type !== 'hidden';
  };

  async function refresh() {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      // marked as a refresh: the server leaves the page's one-time message for the next real page
      const res = await fetch(location.href, { credentials: 'same-origin', headers: { accept: 'text/html', 'x-workgraph-live': '1' } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      for (const fresh of doc.querySelectorAll('[data-live]')) {
        const name = fresh.getAttribute('data-live');
        const current = document.querySelector(`[data-live="${CSS.escape(name)}"]`);
        if (current && !busy(current) && current.innerHTML !== fresh.innerHTML) current.innerHTML = fresh.innerHTML;
      }
      const count = doc.getElementById('inbox-count');
      const shown = document.getElementById('inbox-count');
      if (count && shown) {
        shown.textContent = count.textContent;
        shown.className = count.className;
      }
      root.dataset.liveRefreshes = String(Number(root.dataset.liveRefreshes || '0') + 1);
    } catch {
      // the next event or reconnect tries again
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  }

  // Events come in bursts (a commit is several): one redraw for each burst, and at most one a
  // second, so a busy tenant costs an open page one request a second, not one per event.
  let lastRefresh = 0;
  function schedule() {
    if (timer !== null) return;
    const wait = Math.max(150, 1000 - (Date.now() - lastRefresh));
    timer = setTimeout(() => {
      timer = null;
      lastRefresh = Date.now();
      refresh();
    }, wait);
  }

  function open() {
    const params = new URLSearchParams(filter);
    if (lastId) params.set('since', lastId);
    const query = params.toString();
    source = new EventSource(`/app/events${query ? `?${query}` : ''}`);
    source.onopen = () => {
      const wasPaused = root.dataset.live === 'paused';
      setState('open');
      retryMs = 1000;
      refused = 0;
      // whatever happened while the stream was down and is not replayed (a claim expiring) shows now
      if (wasPaused) schedule();
    };
    source.onmessage = (event) => {
      if (event.lastEventId) lastId = event.lastEventId;
      schedule();
    };
    source.onerror = () => {
      setState('paused');
      // CONNECTING: the browser retries by itself with Last-Event-ID; CLOSED (an error answer): retry here, with backoff
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        // a cursor refused twice (the server's log was reset: cursor ahead) is dropped; the redraw on open covers the gap
        if (++refused >= 2) lastId = '';
        setTimeout(open, retryMs);
        retryMs = Math.min(retryMs * 2, 30000);
      }
    };
  }

  setState('connecting');
  open();
  addEventListener('pagehide', () => source && source.close());
})();
