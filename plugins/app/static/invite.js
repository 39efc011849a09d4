// The one-time sign-in link (plugins/app/pages/signin-links.ts): its secret is the address's
// #fragment, which the browser never sends to a server. This script moves it into the form's
// hidden field and takes it out of the address bar and history at once, so it is neither
// logged, bookmarked nor shown. The person then presses "Sign in": never an automatic post, so
// a mail scanner that opens the link cannot use it up.
(() => {
  const form = document.getElementById('invite-form');
  const field = document.getElementById('invite-secret');
  const missing = document.getElementById('invite-missing');
  if (!form || !field) return;
  const secret = window.location.hash.slice(1);
  if (secret) {
    field.value = secret;
    history.replaceState(null, '', window.location.pathname);
    form.hidden = false;
  } else if (missing) {
    missing.hidden = false;
  }
})();
