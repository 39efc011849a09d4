// Pickers that search by title as the person types: an <input data-lookup="node|project|person">
// with a <datalist> gets its suggestions from /app/lookup (same origin, the session cookie).
// Without this script the input is a plain text field that takes a title or an id.
(function () {
  for (const input of document.querySelectorAll('input[data-lookup]')) {
    const list = input.list;
    if (!list) continue;
    let timer = 0;
    let asked = '';
    const fill = async () => {
      const q = input.value.trim();
      if (q === asked) return;
      asked = q;
      const params = new URLSearchParams({ kind: input.dataset.lookup, q });
      try {
        const res = await fetch('/app/lookup?' + params, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
        if (!res.ok || asked !== q) return;
        const data = await res.json();
        list.replaceChildren(
          ...data.results.map((r) => {
            const option = document.createElement('option');
            // the value is the title (what the person reads); the server resolves a title or an id
            option.value = r.title;
            option.label = r.id + (r.type ? ' · ' + r.type : '');
            return option;
          }),
        );
      } catch {
        // offline or signed out: the field still takes a typed title or id
      }
    };
    input.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(fill, 150);
    });
    input.addEventListener('focus', fill);
  }
})();
