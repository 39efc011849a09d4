/* global document */
// The hook editor's browser code (issue 25 item 5), bundled with CodeMirror 6 by
// `npm run build:editor` into plugins/app/static/hook-editor.js (the app serves only that file;
// no inline script under the app's CSP). Each `textarea[data-code-editor]` of the page gets an
// editor with JavaScript highlighting, line numbers, bracket matching and the standard keys;
// the textarea stays in the form, hidden, and follows every change, so the form posts exactly
// what the editor shows and works unchanged without script.
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { EditorState } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap, lineNumbers, placeholder } from '@codemirror/view';

function enhance(textarea) {
  const label = document.querySelector(`label[for="${textarea.id}"]`)?.textContent ?? 'Hook code';
  const described = textarea.getAttribute('aria-describedby');
  const view = new EditorView({
    parent: textarea.parentElement,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        syntaxHighlighting(defaultHighlightStyle),
        javascript(),
        // Tab indents; Escape then Tab leaves the editor (CodeMirror's focus escape), so keyboard users are not trapped
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        placeholder(textarea.getAttribute('placeholder') ?? ''),
        EditorView.contentAttributes.of({ 'aria-label': label, ...(described ? { 'aria-describedby': described } : {}) }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) textarea.value = update.state.doc.toString();
        }),
      ],
    }),
  });
  textarea.after(view.dom);
  view.dom.classList.add('code-editor');
  view.dom.dataset.for = textarea.id;
  textarea.hidden = true;
  // the label now names the editor: a click on it focuses the editor, not the hidden textarea
  document.querySelector(`label[for="${textarea.id}"]`)?.addEventListener('click', (event) => {
    event.preventDefault();
    view.focus();
  });
}

for (const textarea of document.querySelectorAll('textarea[data-code-editor]')) enhance(textarea);
