/* global document */
// The hook editor's browser code (issue 25 item 5), bundled with CodeMirror 6 by
// `npm run build:editor` into plugins/app/static/hook-editor.js (the app serves only that file;
// no inline script under the app's CSP). Each `textarea[data-code-editor]` of the page gets an
// editor with JavaScript highlighting, line numbers, bracket matching and the standard keys;
// the textarea stays in the form, hidden, and follows every change, so the form posts exactly
// what the editor shows and works unchanged without script.
//
// Each editor lives in a shadow root: CodeMirror's styles (style-mod) go into a <style> element
// when mounted in the document, which the app's CSP (`style-src 'self'`, no inline styles)
// blocks; in a shadow root they are a constructed stylesheet (adoptedStyleSheets), which it
// does not.
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { EditorState } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap, lineNumbers, placeholder } from '@codemirror/view';

const theme = EditorView.theme({
  '&': { fontSize: '0.9rem', backgroundColor: '#fff' },
  '.cm-scroller': { minHeight: '8rem', fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace' },
  // the host shows the focus ring (app.css), so the editor draws none of its own
  '&.cm-focused': { outline: 'none' },
  // the placeholder (an example hook) readable at WCAG AA contrast
  '.cm-placeholder': { color: '#545b66' },
});

function enhance(textarea) {
  const label = document.querySelector(`label[for="${textarea.id}"]`)?.textContent ?? 'Hook code';
  const helpId = textarea.getAttribute('aria-describedby');
  // the help text is outside the shadow root, where aria-describedby cannot reach: its words go along
  const help = helpId ? document.getElementById(helpId)?.textContent : null;
  const host = document.createElement('div');
  host.className = 'code-editor';
  host.dataset.for = textarea.id;
  const shadow = host.attachShadow({ mode: 'open' });
  textarea.after(host);
  const view = new EditorView({
    root: shadow,
    parent: shadow,
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
        theme,
        // long lines wrap: the editor never scrolls sideways (a phone's width; a scroll region with no focus stop of its own)
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'aria-label': help ? `${label}. ${help}` : label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) textarea.value = update.state.doc.toString();
        }),
      ],
    }),
  });
  textarea.hidden = true;
  // the label now names the editor: a click on it focuses the editor, not the hidden textarea
  document.querySelector(`label[for="${textarea.id}"]`)?.addEventListener('click', (event) => {
    event.preventDefault();
    view.focus();
  });
}

for (const textarea of document.querySelectorAll('textarea[data-code-editor]')) enhance(textarea);
