// The board's progressive enhancement (plugins/app/pages/board.ts). Without this file every
// card still moves through its own form. With it: native drag and drop onto the columns the
// card's type allows (data-moves, from the registry), and the card's "Move" form posted with
// fetch, so the board stays in place. Either way the server answers the card as it now is
// (moved, or left where someone else's change put it, with the reason), which replaces the
// old card; the WIP counts are recounted and the outcome is announced to screen readers.
(() => {
  const board = document.getElementById('board');
  const status = document.getElementById('board-status');
  if (!board || !status) return;
  let dragged = null;

  const columnOf = (name) => board.querySelector(`.column[data-status="${CSS.escape(name)}"]`);
  const allowed = (card, name) => (card.dataset.moves || '').split(' ').includes(name);

  function recount() {
    for (const col of board.querySelectorAll('.column')) {
      const wip = col.querySelector('.wip');
      if (wip) wip.textContent = String(col.querySelectorAll('.card').length);
    }
  }

  function announce(text) {
    // cleared first so the same words twice are still read out
    status.textContent = '';
    setTimeout(() => {
      status.textContent = text;
    }, 50);
  }

  function showProblem(card, text) {
    let p = card.querySelector('.card-notice');
    if (!p) {
      p = document.createElement('p');
      card.insertBefore(p, card.querySelector('form'));
    }
    p.className = 'card-notice error';
    p.textContent = text;
    card.classList.add('has-error');
    announce(text);
  }

  async function move(card, to, fromKeyboard) {
    const form = card.querySelector('form.card-move');
    if (!form || card.getAttribute('aria-busy') === 'true') return;
    const body = new URLSearchParams(new FormData(form));
    body.set('status', to);
    card.setAttribute('aria-busy', 'true');
    let res;
    let data = null;
    try {
      res = await fetch(form.action, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      if ((res.headers.get('content-type') || '').includes('application/json')) data = await res.json();
    } catch {
      // the network dropped: said on the card below
    }
    card.removeAttribute('aria-busy');
    if (!data || typeof data.card !== 'string') {
      const why = data && data.error ? data.error.message : res ? `the server answered ${res.status}` : 'the server could not be reached';
      showProblem(card, `Not moved to ${to}: ${why}. Reload the page and try again.`);
      return;
    }
    const tpl = document.createElement('template');
    tpl.innerHTML = data.card.trim();
    const fresh = tpl.content.firstElementChild;
    const column = columnOf(data.status);
    if (!fresh) return;
    card.remove();
    if (column) column.querySelector('.cards-list').prepend(fresh);
    recount();
    announce(`${fresh.querySelector('.card-title')?.textContent?.trim() || data.id}: ${data.message}`);
    document.documentElement.dataset.boardMoves = String(Number(document.documentElement.dataset.boardMoves || '0') + 1);
    const focusTarget = fromKeyboard ? fresh.querySelector('select') || fresh.querySelector('a') : null;
    if (focusTarget) focusTarget.focus();
  }

  board.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains('card-move')) return;
    event.preventDefault();
    // app.js disables a posted form's button; this form was not posted, and the card is replaced anyway
    event.stopImmediatePropagation();
    const card = form.closest('.card');
    const select = form.querySelector('select');
    if (card && select) move(card, select.value, true);
  });

  board.addEventListener('dragstart', (event) => {
    const card = event.target instanceof Element ? event.target.closest('.card') : null;
    if (!card || !event.dataTransfer) return;
    dragged = card;
    event.dataTransfer.effectAllowed = 'move';
    event.dataTransfer.setData('text/plain', card.dataset.id || '');
    card.classList.add('dragging');
    for (const col of board.querySelectorAll('.column')) col.classList.toggle('drop-ok', allowed(card, col.dataset.status));
  });

  board.addEventListener('dragend', () => {
    if (dragged) dragged.classList.remove('dragging');
    dragged = null;
    for (const col of board.querySelectorAll('.column')) col.classList.remove('drop-ok', 'drop-over');
  });

  board.addEventListener('dragover', (event) => {
    const col = event.target instanceof Element ? event.target.closest('.column') : null;
    // only a column the registry allows accepts the drop: elsewhere the browser shows "no drop"
    if (!col || !dragged || !allowed(dragged, col.dataset.status)) return;
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = 'move';
    for (const other of board.querySelectorAll('.drop-over')) if (other !== col) other.classList.remove('drop-over');
    col.classList.add('drop-over');
  });

  board.addEventListener('drop', (event) => {
    const col = event.target instanceof Element ? event.target.closest('.column') : null;
    if (!col || !dragged || !allowed(dragged, col.dataset.status)) return;
    event.preventDefault();
    const card = dragged;
    col.classList.remove('drop-over');
    move(card, col.dataset.status, false);
  });
})();
