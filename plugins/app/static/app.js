// Small progressive enhancement for every page. The pages work without it.
// A form that changes something disables its button once sent, so a double click cannot post twice.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== 'post') return;
  for (const button of form.querySelectorAll('button[type=submit]')) {
    setTimeout(() => {
      button.disabled = true;
    }, 0);
  }
});
